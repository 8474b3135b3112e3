"""Bytes and encodings through the real command line (BAD_INPUTS A1-A4, A6-A8, A10, P14).

Every fixture is a seed page, re-encoded or with bytes inserted or cut; every check is an
exact reason code, locator and byte offset, or an exact equality with the clean run.
"""

from __future__ import annotations

import ast
import codecs
import hashlib
import json
from pathlib import Path
from typing import Any

import pytest

from conftest import (
    ITEM_PAGE,
    ROOT,
    TOPIC_LIST,
    TOPIC_PAGE,
    Out,
    every_string,
    seed_text,
    write_files,
)

TP_TEXT = seed_text(TOPIC_PAGE)
IP_TEXT = seed_text(ITEM_PAGE)
TP_BYTES = TOPIC_PAGE.read_bytes()


def by_file(out: Out) -> dict[str, dict[str, Any]]:
    return {f["file"]: f for f in out.report["files"]}


def rejects_of(out: Out) -> dict[str, list[tuple[str, str, int]]]:
    found: dict[str, list[tuple[str, str, int]]] = {}
    for r in out.rejects:
        found.setdefault(r["file"], []).append((r["locator"], r["reason"], r["byte_offset"]))
    return found


def without_sources(items: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [{k: v for k, v in i.items() if k != "sources"} for i in items]


def listing_offset(data: bytes, n: int) -> int:
    """Byte offset of ``N. [`` of listing ``n`` in the flattened UTF-8 topic page."""
    marker = f" {n}. [".encode()
    assert data.count(marker) == 1
    return data.index(marker) + 1


@pytest.fixture(scope="module")
def clean_tp(tmp_path_factory: pytest.TempPathFactory) -> Out:
    """The clean topic page alone, under the name the damaged copies get."""
    from ingest.cli import main

    folder = write_files(tmp_path_factory.mktemp("clean") / "in", {"tp.txt": TP_BYTES})
    out = folder.parent / "out"
    assert main(["run", str(folder), "--out", str(out), "--quiet"]) == 0
    return Out(out, 0)


# --------------------------------------------------------------------------- A1 A2 A3


ENCODED = {
    "tp_utf8.txt": ("utf-8", "utf-8", TP_TEXT.encode()),
    "tp_utf8_bom.txt": ("utf-8-sig", "utf-8", codecs.BOM_UTF8 + TP_TEXT.encode()),
    "tp_utf16le.txt": ("utf-16-le", "utf-16-le", codecs.BOM_UTF16_LE + TP_TEXT.encode("utf-16-le")),
    "tp_utf16be.txt": ("utf-16-be", "utf-16-be", codecs.BOM_UTF16_BE + TP_TEXT.encode("utf-16-be")),
    "tp_gb18030.txt": ("gb18030", "gb18030", TP_TEXT.encode("gb18030")),
    # GBK is a subset of GB18030: the same bytes, reported under the allow-listed superset.
    "ip_gbk.txt": ("gb18030", "gb18030", IP_TEXT.encode("gbk")),
    "ip_utf8.txt": ("utf-8", "utf-8", IP_TEXT.encode()),
}


def test_each_encoding_decodes_to_the_same_records_and_is_reported(
    ingest: Any, tmp_path: Path
) -> None:
    folder = write_files(tmp_path / "in", {n: data for n, (_, _, data) in ENCODED.items()})
    out = ingest(folder)
    assert out.code == 0 and out.rejects == []
    files = by_file(out)
    for name, (reported, _, _) in ENCODED.items():
        f = files[name]
        expected = (reported, "ok", 44 if name.startswith("tp_") else 7)
        assert (f["encoding"], f["status"], f["listings"]) == expected, name
        assert f["warnings"] == [], name
    baseline = ingest(TOPIC_PAGE, ITEM_PAGE)
    assert without_sources(out.items) == without_sources(baseline.items)
    # Every listing's byte offset points at its own bytes in its own encoding.
    for item in out.items:
        names = {s["file"] for s in item["sources"]}
        if item["topics"]:  # the 44 listed items; 3 more are only in the item page's reading
            assert names >= {n for n in ENCODED if n.startswith("tp_")}
        for s in item["sources"]:
            _, codec, data = ENCODED[s["file"]]
            if s["format"] == "topic-page":
                rank = int(s["locator"].removeprefix("listing "))
                assert data[s["byte_offset"] :].startswith(f"{rank}. [".encode(codec)), s
            assert s["sha256"] == hashlib.sha256(data).hexdigest()
    for text in every_string(out.items):
        assert "\ufeff" not in text and "\ufffd" not in text


def test_utf16_without_bom_is_rejected_not_guessed(ingest: Any, tmp_path: Path) -> None:
    chinese = "学习模型服务框架并行计算与底层优化适合维护训练和推理基础设施的人员。" * 4
    folder = write_files(
        tmp_path / "in",
        {
            "tp_le.txt": TP_TEXT.encode("utf-16-le"),
            "tp_be.txt": TP_TEXT.encode("utf-16-be"),
            "zh_le.txt": chinese.encode("utf-16-le"),  # no NUL byte at all
            "zh_be.txt": chinese.encode("utf-16-be"),
        },
    )
    out = ingest(folder)
    assert out.code == 0 and out.items == []
    assert rejects_of(out) == {
        "tp_be.txt": [("file", "BINARY_CONTENT", 0)],
        "tp_le.txt": [("file", "BINARY_CONTENT", 0)],
        "zh_be.txt": [("file", "ENCODING_UNDECODABLE", 0)],
        "zh_le.txt": [("file", "ENCODING_UNDECODABLE", 0)],
    }
    assert {f["status"] for f in out.report["files"]} == {"rejected"}


# --------------------------------------------------------------------------- A4


AMBIGUOUS = {
    "a4.txt": "詢刓堁昲堤疑脰".encode("gb18030"),  # measured: a detector calls it Big5
    "a4_line.txt": "詢刓堁昲堤疑脰\n".encode("gb18030"),
    "gb_short.txt": "模型服务与算力".encode("gb18030"),
    "big5_short.txt": "模型服務與算力".encode("big5"),  # also decodes cleanly as GB18030
}


def test_short_text_two_encodings_could_explain_is_ambiguous(ingest: Any, tmp_path: Path) -> None:
    assert AMBIGUOUS["big5_short.txt"].decode("gb18030")  # the trap: it decodes cleanly
    out = ingest(write_files(tmp_path / "in", dict(AMBIGUOUS)))
    assert out.code == 0 and out.items == [] and out.topics == []
    assert rejects_of(out) == {n: [("file", "ENCODING_AMBIGUOUS", 0)] for n in AMBIGUOUS}
    for r in out.rejects:
        assert "too short" in r["message"] and "\n" not in r["message"]
    assert {f["encoding"] for f in out.report["files"]} == {None}


# --------------------------------------------------------------------------- A6 A7


BAD_SEQUENCES = {
    "ff": b"\xff",
    "overlong": b"\xc0\xaf",
    "above_max": b"\xf4\x90\x80\x80",
    "cesu_surrogate": b"\xed\xa0\x80",
}


CASES = [
    pytest.param(k, bad, b"", id=f"listing{k}-{name}")
    for k in (1, 20, 44)
    for name, bad in BAD_SEQUENCES.items()
] + [
    pytest.param(20, bad, codecs.BOM_UTF8, id=f"listing20-{name}-bom")
    for name, bad in BAD_SEQUENCES.items()
]


@pytest.mark.parametrize("k,bad,bom", CASES)
def test_invalid_bytes_reject_exactly_one_listing(
    ingest: Any, tmp_path: Path, clean_tp: Out, k: int, bad: bytes, bom: bytes
) -> None:
    start = listing_offset(TP_BYTES, k)
    colon = TP_BYTES.index("）：".encode(), start) + len("）：".encode())
    at = colon + len("这是".encode())  # inside the summary, between two characters
    damaged = bom + TP_BYTES[:at] + bad + TP_BYTES[at:]
    out = ingest(write_files(tmp_path / "in", {"tp.txt": damaged}))
    assert out.code == 0
    [rj] = out.rejects
    assert (rj["file"], rj["locator"], rj["reason"]) == ("tp.txt", f"listing {k}", "INVALID_UTF8")
    assert rj["byte_offset"] == start + len(bom)
    assert damaged[rj["byte_offset"] :].startswith(f"{k}. [".encode())
    f = by_file(out)["tp.txt"]
    assert (f["status"], f["listings"], f["rejected_listings"]) == ("partial", 44, 1)
    assert f["encoding"] == ("utf-8-sig" if bom else "utf-8")
    # All 43 others: byte-identical to the clean run but for the file hash and the shift.
    sha = hashlib.sha256(damaged).hexdigest()
    expected = []
    for item in clean_tp.items:
        [src] = item["sources"]
        rank = int(src["locator"].removeprefix("listing "))
        if rank == k:
            continue
        shift = len(bom) + (len(bad) if rank > k else 0)
        expected.append(
            {**item, "sources": [{**src, "sha256": sha, "byte_offset": src["byte_offset"] + shift}]}
        )
    assert out.items == expected
    lines = out.bytes_of("items.jsonl").decode().splitlines()
    assert lines == [json.dumps(e, ensure_ascii=False, separators=(",", ":")) for e in expected]
    for text in every_string(out.items):
        assert "\ufffd" not in text


# --------------------------------------------------------------------------- A10


def cut_inside_last_char(data: bytes, keep: int) -> bytes:
    """``data`` without its final newline, cut after ``keep`` bytes of its last character."""
    data = data.rstrip(b"\n")
    lead = len(data) - 1
    while data[lead] & 0xC0 == 0x80:
        lead -= 1
    assert len(data) - lead == 3  # the seeds end with a 3-byte '。' or '）'
    return data[: lead + keep]


@pytest.mark.parametrize("keep", [1, 2])
@pytest.mark.parametrize(
    "seed,locator,listings",
    [(TOPIC_LIST, "line 39", 19), (ITEM_PAGE, "related 6", 7)],
    ids=["topic_list", "item_page"],
)
def test_file_cut_inside_its_last_character(
    ingest: Any, tmp_path: Path, seed: Path, locator: str, listings: int, keep: int
) -> None:
    raw = seed.read_bytes()
    damaged = cut_inside_last_char(raw, keep)
    out = ingest(write_files(tmp_path / "in", {"cut.txt": damaged}))
    assert out.code == 0
    [rj] = out.rejects
    assert (rj["locator"], rj["reason"]) == (locator, "TRUNCATED_ITEM")
    last_entry = raw.rstrip(b"\n").rsplit(b"\n", 3 if seed == ITEM_PAGE else 2)[1]
    assert rj["byte_offset"] == raw.rindex(last_entry)
    f = by_file(out)["cut.txt"]
    assert (f["encoding"], f["status"]) == ("utf-8", "partial")
    assert (f["listings"], f["rejected_listings"]) == (listings, 1)
    assert len(out.items) == listings - 1


@pytest.mark.parametrize("keep", [1, 2])
def test_topic_page_cut_inside_a_character_of_the_last_listing(
    ingest: Any, tmp_path: Path, clean_tp: Out, keep: int
) -> None:
    start = listing_offset(TP_BYTES, 44)
    mid = TP_BYTES.index("。".encode(), start)  # a 3-byte character inside listing 44
    damaged = TP_BYTES[: mid + keep]
    out = ingest(write_files(tmp_path / "in", {"tp.txt": damaged}))
    [rj] = out.rejects
    assert (rj["locator"], rj["reason"], rj["byte_offset"]) == (
        "listing 44",
        "TRUNCATED_ITEM",
        start,
    )
    assert without_sources(out.items) == without_sources(
        [i for i in clean_tp.items if i["topics"][0]["rank"] != 44]
    )


# --------------------------------------------------------------------------- A8


def test_nul_bytes_inside_text_are_stripped_with_a_warning(
    ingest: Any, tmp_path: Path, clean_tp: Out
) -> None:
    start = listing_offset(TP_BYTES, 5)
    title_at = start + len(b"5. [") + len("同样的".encode())
    summary_at = TP_BYTES.index("）：".encode(), start) + len("）：演讲".encode())
    damaged = (
        TP_BYTES[:title_at]
        + b"\x00"
        + TP_BYTES[title_at:summary_at]
        + b"\x00\x00"
        + TP_BYTES[summary_at:]
    )
    blob = (b"\x00\x01\x02\x03" + bytes(range(200, 256))) * 30  # NUL-heavy, no magic number
    out = ingest(write_files(tmp_path / "in", {"tp.txt": damaged, "blob.txt": blob}))
    assert rejects_of(out) == {"blob.txt": [("file", "BINARY_CONTENT", 0)]}
    assert without_sources(out.items) == without_sources(clean_tp.items)
    warnings = by_file(out)["tp.txt"]["warnings"]
    assert warnings == ["listing 5: CONTROL_CHAR_REMOVED", "listing 5: CONTROL_CHAR_REMOVED"]
    for text in every_string(out.items):
        assert "\x00" not in text


# --------------------------------------------------------------------------- P14


LOSSY = {"replace", "ignore", "backslashreplace", "namereplace", "xmlcharrefreplace"}


def _lossy_decode_calls(source: str) -> list[int]:
    found = []
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
        if name not in ("decode", "open", "read_text", "TextIOWrapper", "getincrementaldecoder"):
            continue
        args = [*node.args[1:], *(k.value for k in node.keywords if k.arg == "errors")]
        if any(isinstance(a, ast.Constant) and a.value in LOSSY for a in args):
            found.append(node.lineno)
    return found


def test_nothing_is_ever_decoded_lossily() -> None:
    package = ROOT / "src" / "ingest"
    offenders = {
        str(p.relative_to(package)): lines
        for p in sorted(package.rglob("*.py"))
        if (lines := _lossy_decode_calls(p.read_text("utf-8")))
    }
    assert offenders == {}
    # The check itself sees such a call.
    assert _lossy_decode_calls('b"x".decode("utf-8", errors="replace")') == [1]
    assert _lossy_decode_calls('b"x".decode("utf-8", "ignore")') == [1]
