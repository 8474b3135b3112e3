"""The output contract is checked where records are written, and it is the published one.

Records are msgspec Structs: building one checks nothing, so ``records.serial`` decodes
what it writes with the record's type. These tests break a rule of each kind (a pattern, a
range, an enum, nesting, a field a record lacks) and see the write refuse it; and they check,
on records broken at random, that the records' types accept exactly what ``schemas/``
accepts, so the check at write time is the contract sites read.
"""

from __future__ import annotations

import json
from typing import Any

import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from jsonschema import Draft202012Validator

from conftest import ROOT
from ingest.contract import (
    ChangeCounts,
    ContractError,
    Decision,
    DecisionSide,
    Item,
    OpCounts,
    Report,
    RunInfo,
    Source,
    Totals,
    json_bytes,
    jsonl,
)

SOURCE = Source(
    file="a.txt", sha256="0" * 64, format="topic-page", locator="listing 1", byte_offset=0, line=1
)
ITEM: dict[str, Any] = {
    "id": "0123456789abcdef",
    "kind": "blog",
    "kind_label": "博客",
    "title_zh": "标题",
    "title_original": "Title",
    "original_language": "en",
    "summary_zh": "摘要。",
    "url": None,
    "publisher": None,
    "published_ago": "5 个月前",
    "published_estimate": {"earliest": "2026-05-01", "latest": "2026-07-01"},
    "rating": None,
    "collected_on": "2026-10-28",
    "topics": [{"slug": "t-1", "rank": 3, "level": "beginner", "level_label": "入门"}],
    "related": ["fedcba9876543210"],
    "sources": [msgspec.to_builtins(SOURCE)],
}


def _item(**changes: Any) -> Item:
    return msgspec.structs.replace(msgspec.convert(ITEM, Item, strict=False), **changes)


def test_a_record_keeping_the_contract_is_written_as_it_is() -> None:
    item = _item()
    assert json.loads(json_bytes(item)) == ITEM
    assert b"".join(jsonl([item, item])) == json_bytes(item) + b"\n" + json_bytes(item) + b"\n"


@pytest.mark.parametrize(
    ("broken", "words"),
    [
        (lambda: _item(id="Not An Id"), ("Item", "$.id")),
        (lambda: _item(kind="zine"), ("Item", "$.kind")),
        (lambda: _item(sources=[msgspec.structs.replace(SOURCE, line=0)]), ("$.sources[0].line",)),
        (lambda: _item(related=["x"]), ("$.related[0]",)),
        (lambda: _item(summary_zh=None), ("$.summary_zh",)),
        (lambda: _item(topics=[{"slug": "t"}]), ("$.topics[0]",)),  # a dict, not a record
    ],
)
def test_a_record_breaking_the_contract_is_never_written(broken: Any, words: Any) -> None:
    for write in (json_bytes, lambda r: b"".join(jsonl([_item(), r]))):
        with pytest.raises(ContractError) as e:
            write(broken())
        assert all(w in str(e.value) for w in words), e.value


def test_the_report_is_checked_too() -> None:
    side = DecisionSide(summary_zh="甲", title=None, source="a.txt: listing 1")
    counts = OpCounts(added=0, changed=0, removed=0, merged=0)
    report = Report(
        schema_version="1.1.0",
        ingest_version="0",
        run=RunInfo(
            mode="snapshot", sequence=1, crawled_at=None, previous_items=None, previous_topics=None
        ),
        files=[],
        totals=Totals(*[0] * 12),
        changes=ChangeCounts(items=counts, topics=counts),
        consistency=[],
        conflicts=[],
        decisions=[
            Decision(item="0123456789abcdef", kind="guess", score=1, evidence="", a=side, b=side)
        ],  # type: ignore[arg-type]
        warnings=[],
        timing={},
    )
    with pytest.raises(ContractError, match=r"\$\.decisions\[0\]\.kind"):
        json_bytes(report, indent=2)


# --------------------------------------------------------------------------- the schema


SCHEMA = Draft202012Validator(
    json.loads((ROOT / "schemas" / "item.schema.json").read_bytes()),
    format_checker=Draft202012Validator.FORMAT_CHECKER,  # "format": "date" is part of it
)
PATHS = [
    ("id",),
    ("kind",),
    ("summary_zh",),
    ("url",),
    ("collected_on",),
    ("published_estimate", "latest"),
    ("topics", 0, "slug"),
    ("topics", 0, "rank"),
    ("topics", 0, "level"),
    ("related", 0),
    ("sources", 0, "format"),
    ("sources", 0, "byte_offset"),
    ("sources", 0, "line"),
]
VALUES = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-2, 2),
    # JSON Schema counts 1.0 as an integer; ingest writes integers as integers
    st.floats(allow_nan=False, allow_infinity=False).filter(lambda f: not f.is_integer()),
    st.sampled_from(["", "blog", "beginner", "topic-page", "2026-02-30", "2026-01-31", "ab-12"]),
    st.sampled_from(["0123456789abcdef", "x", "A123456", "abc\n", [], {}]),
)


@settings(max_examples=300, deadline=None)
@given(st.sampled_from(PATHS), VALUES, st.sampled_from([None, "extra", "id"]))
def test_the_records_types_accept_what_the_published_schema_accepts(
    path: tuple[Any, ...], value: Any, extra: str | None
) -> None:
    doc: Any = json.loads(json.dumps(ITEM))
    target = doc
    *inner, last = path
    for step in inner:
        target = target[step]
    target[last] = value
    if extra == "extra":
        doc["unknown"] = 1
    elif extra == "id":
        del doc["id"]
    by_schema = SCHEMA.is_valid(doc)
    try:
        msgspec.json.decode(json.dumps(doc), type=Item)
        by_type = True
    except msgspec.ValidationError:
        by_type = False
    assert by_type == by_schema, (doc, by_type, by_schema)
