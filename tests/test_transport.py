"""What crosses between processes comes back the same: a parsed page (the ``--jobs``
workers send every one to the run; Dask workers ship them) and a component's finished
records (Dask workers send every one to the driver) travel as one MessagePack blob each,
not as pickled records, and what MessagePack cannot hold is pickled as it is."""

from __future__ import annotations

import pickle

from conftest import SEEDS
from ingest.extract.discover import collect_inputs
from ingest.extract.pages import parse_bytes
from ingest.pipeline.local import LocalEngine
from ingest.pipeline.steps import Context, run_steps
from ingest.records import PageResult
from ingest.resolve.finish import Finished


def _seed_parts() -> list[Finished]:
    """The finished records of the seeds, one for each resolved component."""
    with LocalEngine() as engine:
        return run_steps(engine, collect_inputs([str(SEEDS)]), Context()).parts


def _seed_pages() -> list[PageResult]:
    return [parse_bytes(f.name, f.path.read_bytes()) for f in collect_inputs([str(SEEDS)])]


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
    page = max(_seed_pages(), key=lambda p: len(p.listings))
    assert len(page.listings) > 10
    data = pickle.dumps(page, protocol=pickle.HIGHEST_PROTOCOL)
    assert b"_from_msgpack" in data and b"Listing" not in data
    back = pickle.loads(data)
    assert back == page
    first = back.listings[0].prov
    for x in back.listings[1:]:
        assert x.prov.file is first.file and x.prov.sha256 is first.sha256
        assert x.prov.format is first.format


def test_a_page_messagepack_cannot_hold_is_pickled_as_it_is() -> None:
    page = _seed_pages()[0]
    page.warnings = [*page.warnings, "a lone surrogate \udcff in a warning"]
    data = pickle.dumps(page, protocol=pickle.HIGHEST_PROTOCOL)
    assert b"_from_msgpack" not in data
    assert pickle.loads(data) == page
