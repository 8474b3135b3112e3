"""Pinning a site's own fixtures in its tests: :func:`assert_fixture`.

.. code-block:: python

    from ingest.testing import assert_fixture

    def test_our_pages_give_the_records_we_rely_on():
        assert_fixture("tests/fixtures/learnmap")
"""

from __future__ import annotations

import os
from pathlib import Path

from ingest.check import check


def assert_fixture(fixture: str | os.PathLike[str]) -> None:
    """Fail (``AssertionError``) with the difference ``ingest check`` prints when the
    fixture (see :mod:`ingest.check`) gives other records than its ``expected/`` ones."""
    diff = check(Path(fixture))
    if not diff.equal:
        raise AssertionError(diff.text())
