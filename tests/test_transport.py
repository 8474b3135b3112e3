"""What crosses between processes (the --jobs pool, Dask workers) comes back the same."""

from __future__ import annotations

import pickle

from conftest import SEEDS
from ingest.engines.local import LocalEngine
from ingest.extract.discover import collect_inputs
from ingest.extract.pages import extract_page
from ingest.steps import run_steps
from ingest.transform.records import Finished


def _seed_parts() -> list[Finished]:
    return run_steps(LocalEngine(), collect_inputs([str(SEEDS)])).parts


def test_finished_records_cross_as_messagepack_and_come_back_equal() -> None:
    parts = _seed_parts()
    assert any(p.items and p.entries for p in parts)
    for part in parts:
        data = pickle.dumps(part, protocol=pickle.HIGHEST_PROTOCOL)
        assert b"_from_msgpack" in data and b"Item" not in data  # one blob, no pickled records
        assert pickle.loads(data) == part


def test_finished_records_messagepack_cannot_hold_are_pickled_as_they_are() -> None:
    part = _seed_parts()[0]
    part.warnings = (*part.warnings, "a lone surrogate \udcff in a warning")
    part.near_merges, part.order_joins = 2, 3
    data = pickle.dumps(part, protocol=pickle.HIGHEST_PROTOCOL)
    assert b"_from_msgpack" not in data
    assert pickle.loads(data) == part


def test_a_page_crosses_as_messagepack_and_its_listings_share_its_strings_again() -> None:
    """Decoded, every listing had its own copy of the page's file name, sha256 and format
    (memory a large run holds): they are one string each again, and equal as sent."""
    inputs = [f for f in collect_inputs([str(SEEDS)]) if f.problem is None]
    pages = [extract_page(f) for f in inputs]
    page = max(pages, key=lambda p: len(p.listings))
    assert len(page.listings) > 10
    data = pickle.dumps(page, protocol=pickle.HIGHEST_PROTOCOL)
    assert b"_from_msgpack" in data
    back = pickle.loads(data)
    assert back == page
    first = back.listings[0].prov
    for x in back.listings[1:]:
        assert x.prov.file is first.file and x.prov.sha256 is first.sha256
        assert x.prov.format is first.format
