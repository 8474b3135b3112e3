"""Property tests through the real command line (BAD_INPUTS.md P1, P3, P7; B3, A6, A10).

Every example runs ``ingest.cli.main(["run", ...])`` in-process, exactly as the ``ingest``
fixture of conftest.py does, but on a fresh temporary folder per Hypothesis example (a
function-scoped fixture is not reset between examples). Derandomized, no deadline; the
slow profile (``make test-slow``) runs 24-200 examples per property, the default a tenth.

- Totality (P3) and conservation (P1): arbitrary bytes, and seed pages mutated by operators
  drawn with ``st.data()``; every run exits 0, writes the four files, and the accounting
  adds up per run and per file. Outcomes are tagged with ``hypothesis.event`` and the
  mutation test asserts that ok / partial / rejected and several reject reasons are reached.
- Prefix property (P7, B3): a seed cut at byte k keeps every whole listing before the cut,
  identical to the full run, and reports the cut one.
- Isolation (P7): corrupting one listing changes only that listing's outcome.
"""

from __future__ import annotations

import json
import re
import tempfile
from collections import Counter
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from hypothesis import event, example, given, settings
from hypothesis import strategies as st

from conftest import ITEM_PAGE, TOPIC_LIST, TOPIC_PAGE, cli_examples, multiline_topic_page
from ingest.cli import main


def ci(examples: int) -> settings:
    """``examples`` examples under the slow profile, fewer by default (see conftest)."""
    return settings(max_examples=cli_examples(examples))


SEEDS: dict[str, bytes] = {p.name: p.read_bytes() for p in (TOPIC_PAGE, TOPIC_LIST, ITEM_PAGE)}
N000, N001, N004 = TOPIC_PAGE.name, TOPIC_LIST.name, ITEM_PAGE.name
OUTPUT_FILES = ("items.jsonl", "topics.jsonl", "rejects.jsonl", "report.json")
SENTENCE_END = ("。", "！", "？")
COMPARED = ("title_zh", "title_original", "summary_zh", "topics")


# --------------------------------------------------------------------------- running


@dataclass
class Snapshot:
    """One finished run, read into memory before its temporary folder goes away."""

    code: int
    items: list[dict[str, Any]]
    topics: list[dict[str, Any]]
    rejects: list[dict[str, Any]]
    report: dict[str, Any]

    def file_report(self, name: str) -> dict[str, Any]:
        [f] = [f for f in self.report["files"] if f["file"] == name]
        return f

    def listing_rejects(self, name: str) -> list[dict[str, Any]]:
        return [r for r in self.rejects if r["file"] == name and r["locator"] != "file"]

    def file_rejects(self, name: str) -> list[dict[str, Any]]:
        return [r for r in self.rejects if r["file"] == name and r["locator"] == "file"]

    def items_from(self, name: str) -> list[dict[str, Any]]:
        return [i for i in self.items if any(s["file"] == name for s in i["sources"])]


def cli_run(files: dict[str, bytes]) -> Snapshot:
    """``ingest run IN --out OUT --quiet`` in-process on fresh folders; checks P1/P3."""
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp, "in")
        folder.mkdir()
        for name, data in files.items():
            (folder / name).write_bytes(data)
        out = Path(tmp, "out")
        code = main(["run", str(folder), "--out", str(out), "--quiet"])
        assert isinstance(code, int)
        assert code == 0
        for name in OUTPUT_FILES:
            assert (out / name).is_file(), f"{name} not written"

        def lines(name: str) -> list[dict[str, Any]]:
            text = (out / name).read_text(encoding="utf-8")
            return [json.loads(x) for x in text.splitlines()]

        snap = Snapshot(
            code,
            lines("items.jsonl"),
            lines("topics.jsonl"),
            lines("rejects.jsonl"),
            json.loads((out / "report.json").read_text(encoding="utf-8")),
        )
    check_accounting(snap, sorted(files))
    return snap


def check_accounting(snap: Snapshot, names: list[str]) -> None:
    """P1: every listing read is merged or rejected; every file has one outcome."""
    t = snap.report["totals"]
    assert t["listings"] == t["listings_merged"] + t["listings_rejected"]
    assert t["listings_merged"] == sum(len(i["sources"]) for i in snap.items)
    assert t["rejects"] == len(snap.rejects)
    assert t["items"] == len(snap.items)
    assert t["topics"] == len(snap.topics)
    assert t["files"] == len(names)
    assert sorted(f["file"] for f in snap.report["files"]) == names
    ids = [i["id"] for i in snap.items]
    assert ids == sorted(set(ids))
    assert {r["file"] for r in snap.rejects} <= set(names)
    for f in snap.report["files"]:
        name = f["file"]
        file_level = snap.file_rejects(name)
        bad = snap.listing_rejects(name)
        merged = sum(1 for i in snap.items for s in i["sources"] if s["file"] == name)
        if f["status"] == "rejected":
            assert len(file_level) == 1, f"{name}: rejected without one file-level reject"
            assert f["listings"] == 0 and not bad and not merged
        else:
            assert not file_level, f"{name}: file-level reject but status {f['status']}"
            assert f["status"] == ("partial" if bad else "ok")
        assert f["rejected_listings"] == len(bad)
        assert f["listings"] == merged + len(bad), name


def tag_outcomes(snap: Snapshot, seen: Counter[str] | None = None) -> None:
    tags = [f"status:{f['status']}" for f in snap.report["files"]]
    tags += [f"reason:{r['reason']}" for r in snap.rejects]
    for tag in sorted(set(tags)):
        event(tag)
    if seen is not None:
        seen.update(set(tags))


@cache
def full_run(name: str) -> Snapshot:
    return cli_run({name: SEEDS[name]})


@cache
def clean_batch() -> Snapshot:
    return cli_run(dict(SEEDS))


# --------------------------------------------------------------------------- 1. totality


@ci(150)
@given(st.lists(st.binary(max_size=4096), min_size=1, max_size=3))
def test_totality_on_arbitrary_bytes(blobs: list[bytes]) -> None:
    snap = cli_run({f"f{i}.txt": b for i, b in enumerate(blobs)})
    tag_outcomes(snap)


_LISTING_HEAD = re.compile(r"(?<!\S)([0-9]+)\. \[")
_DELIMS = [("（", "("), ("）", ")"), ("：", ":"), ("·", "・"), ("·", "•")]
_STRUCTURAL = ["[", "]", "(", ")", "（", "）", "\\", " 7. [", "](", "）：", " --- ", "\n", "\r"]
_CONTROLS = [
    "\x00",
    "\x07",
    "\x0b",
    "\x0c",
    "\x1b[31m",
    "\x85",
    "\u2028",
    "\u2029",
    "\u200b",
    "\u202e",
    "\ufeff",
    "\x1c",
]
_FULLWIDTH = str.maketrans("0123456789", "０１２３４５６７８９")


def _units(name: str, text: str) -> list[tuple[int, int]]:
    """Character spans of the page's listings (topic page) or entries (line pages)."""
    if name.startswith("000"):
        starts = [m.start() for m in _LISTING_HEAD.finditer(text)]
        ends = [*starts[1:], max(text.find(" --- "), 0) or len(text)]
        return [(a, b) for a, b in zip(starts, ends, strict=True) if a < b]
    offsets, pos = [], 0
    for line in text.split("\n"):
        offsets.append((pos, pos + len(line) + 1))
        pos += len(line) + 1
    size = 2 if name.startswith("001") else 3
    first = 2 if name.startswith("001") else 9
    body = offsets[first:]
    return [
        (body[i][0], min(body[i + size - 1][1], len(text)))
        for i in range(0, len(body) - size + 1, size)
    ]


def _listing_op(data: st.DataObject, name: str, text: str) -> str:
    units = _units(name, text)
    op = data.draw(st.sampled_from(["none", "delete", "duplicate", "swap", "renumber"]))
    event(f"op:listing-{op}")
    if op == "none" or len(units) < 2:
        return text
    i = data.draw(st.integers(0, len(units) - 2))
    (a, b), (c, d) = units[i], units[i + 1]
    if op == "delete":
        return text[:a] + text[b:]
    if op == "duplicate":
        return text[:b] + text[a:b] + text[b:]
    if op == "swap":
        first, second = text[a:b], text[c:d]
        if not name.startswith("000"):
            first, second = first.rstrip("\n") + "\n", second.rstrip("\n") + "\n"
        return text[:a] + second + first + text[d:]
    m = _LISTING_HEAD.match(text, a)
    if m is None:  # line pages: renumber = swap a title with its summary
        lines = text[a:b].split("\n")
        lines[0], lines[1] = lines[1], lines[0]
        return text[:a] + "\n".join(lines) + text[b:]
    n = data.draw(st.one_of(st.integers(0, 60).map(str), st.just(m.group(1).translate(_FULLWIDTH))))
    return text[: m.start(1)] + n + text[m.end(1) :]


def _line_op(data: st.DataObject, text: str) -> str:
    lines = text.split("\n")
    op = data.draw(st.sampled_from(["delete", "duplicate", "swap"]))
    event(f"op:line-{op}")
    i = data.draw(st.integers(0, len(lines) - 1))
    if op == "delete":
        del lines[i]
    elif op == "duplicate":
        lines.insert(i, lines[i])
    elif i + 1 < len(lines):
        lines[i], lines[i + 1] = lines[i + 1], lines[i]
    return "\n".join(lines)


def _char_op(data: st.DataObject, text: str) -> str:
    op = data.draw(st.sampled_from(["delimiter", "structural", "control", "text"]))
    event(f"op:char-{op}")
    if op == "delimiter":
        a, b = data.draw(st.sampled_from(_DELIMS))
        if data.draw(st.booleans()):
            a, b = b, a
        hits = [m.start() for m in re.finditer(re.escape(a), text)]
        if not hits:
            return text
        at = hits[data.draw(st.integers(0, len(hits) - 1))]
        return text[:at] + b + text[at + len(a) :]
    at = data.draw(st.integers(0, len(text)))
    if op == "structural":
        s = data.draw(st.sampled_from(_STRUCTURAL))
    elif op == "control":
        s = data.draw(st.sampled_from(_CONTROLS))
    else:
        s = data.draw(st.text(max_size=8))
    return text[:at] + s + text[at:]


def _encode(data: st.DataObject, text: str) -> bytes:
    if data.draw(st.integers(0, 9)) == 0:  # a saved HTML page around the dump (B9)
        event("op:html-wrap")
        text = f"<!DOCTYPE html><html><body><pre>{text}</pre></body></html>"
    enc = data.draw(st.sampled_from(["utf-8"] * 5 + ["utf-8-sig", "utf-16", "gb18030"]))
    event(f"op:encode-{enc}")
    return text.encode(enc, errors="surrogatepass")


def _byte_op(data: st.DataObject, raw: bytes) -> bytes:
    op = data.draw(st.sampled_from(["cut", "insert"]))
    event(f"op:bytes-{op}")
    at = data.draw(st.integers(0, len(raw)))
    if op == "cut":
        return raw[:at]
    return raw[:at] + data.draw(st.binary(min_size=1, max_size=4)) + raw[at:]


def mutate(data: st.DataObject) -> tuple[str, bytes, bool]:
    """A mutated seed page: (file name, bytes, run it together with the other seeds?)."""
    name = data.draw(st.sampled_from([N000, N000 + ".multi", N001, N004]))
    text = SEEDS[name.removesuffix(".multi")].decode("utf-8")
    if name.endswith(".multi"):
        name, text = N000, multiline_topic_page(text)
    text = _listing_op(data, name, text)
    for _ in range(data.draw(st.integers(0, 2))):
        text = _line_op(data, text)
    for _ in range(data.draw(st.integers(0, 3))):
        text = _char_op(data, text)
    raw = _encode(data, text)
    for _ in range(data.draw(st.integers(0, 2))):
        raw = _byte_op(data, raw)
    return name, raw, data.draw(st.booleans())


def test_totality_on_mutated_seeds_reaches_every_outcome() -> None:
    """P3 on mutated seeds, with a reachability check so the property is not vacuous."""
    seen: Counter[str] = Counter()

    @ci(200)
    @given(st.data())
    def prop(data: st.DataObject) -> None:
        name, raw, with_others = mutate(data)
        files = {**SEEDS, name: raw} if with_others else {name: raw}
        snap = cli_run(files)
        tag_outcomes(snap, seen)

    prop()
    assert {"status:ok", "status:partial", "status:rejected"} <= set(seen), seen
    reasons = {k for k in seen if k.startswith("reason:")}
    assert len(reasons) >= 3, seen


# --------------------------------------------------------------------------- 2. prefixes


def _fields(item: dict[str, Any]) -> tuple[Any, ...]:
    return tuple(item[k] for k in COMPARED)


def _line_spans(data: bytes) -> list[tuple[int, int]]:
    """(start, end) byte offsets of each line, the line break excluded."""
    spans, pos = [], 0
    for line in data.split(b"\n"):
        spans.append((pos, pos + len(line)))
        pos += len(line) + 1
    return spans


def _check_cut_entry(
    cut: Snapshot, name: str, full: dict[str, dict[str, Any]], whole: set[str], k: int
) -> list[dict[str, Any]]:
    """Items of a cut file: whole entries identical; returns the other (cut) ones."""
    items = cut.items_from(name)
    by_summary = {i["summary_zh"]: i for i in items}
    for s in whole:
        assert s in by_summary, f"cut at {k}: a whole entry is missing: {s[:40]}"
        assert _fields(by_summary[s]) == _fields(full[s]), f"cut at {k}: entry changed"
    extra = [i for i in items if i["summary_zh"] not in whole]
    for i in extra:
        # The cut entry may be emitted only when it is indistinguishable from a whole one:
        # a prefix of the full summary that ends at a sentence end (BAD_INPUTS B3).
        matches = [s for s in full if s.startswith(i["summary_zh"]) and s not in whole]
        assert matches, f"cut at {k}: unknown item emitted: {i['summary_zh'][:60]!r}"
        assert i["summary_zh"].endswith(SENTENCE_END), (
            f"cut at {k}: the cut entry was emitted with a truncated summary ending "
            f"{i['summary_zh'][-20:]!r} (full: ...{matches[0][len(i['summary_zh']) - 20 :][:40]!r})"
        )
    return extra


def _after(seed: bytes, text: str) -> int:
    """The byte offset just after ``text`` in ``seed`` (explicit cut examples)."""
    return seed.index(text.encode()) + len(text.encode())


@ci(150)
@given(st.integers(0, len(SEEDS[N000])))
@example(_after(SEEDS[N000], "44. [Stanford CS149：并行计算（2025 秋）]()（课"))  # in the last head
@example(_after(SEEDS[N000], "等主题。 --"))  # inside the footer's '---'
def test_prefix_of_topic_page(k: int) -> None:
    """Topic page (has a footer): without it the last listing present is TRUNCATED_ITEM and
    every earlier listing is emitted exactly as in the full run."""
    seed = SEEDS[N000]
    full = {i["topics"][0]["rank"]: i for i in full_run(N000).items}
    starts = {n: seed.index(f" {n}. [".encode()) + 1 for n in full}
    footer = seed.index(b" --- ") + 1
    cut = cli_run({N000: seed[:k]})
    tag_outcomes(cut)
    got = {i["topics"][0]["rank"]: i for i in cut.items}
    rejects = cut.listing_rejects(N000)
    if k >= footer + 3:  # the footer's '---' survived: nothing was cut from a listing
        assert not rejects and got.keys() == full.keys()
        assert all(_fields(got[n]) == _fields(full[n]) for n in full)
        return
    present = [n for n in full if starts[n] < k]
    j = max(present, default=0)  # the listing the cut falls in
    if cut.file_rejects(N000):
        assert j <= 1, f"cut at {k}: whole file rejected with whole listings before the cut"
        return
    assert all(_fields(got[n]) == _fields(full[n]) for n in got), f"cut at {k}"
    if not rejects:  # no head survived whole
        assert j <= 1 and not got
        return
    [rej] = rejects
    assert rej["reason"] == "TRUNCATED_ITEM", rej
    t = int(rej["locator"].removeprefix("listing "))
    assert t in (j - 1, j), f"cut at {k} in listing {j}, but listing {t} reported"
    assert sorted(got) == list(range(1, t)), f"cut at {k}: emitted {sorted(got)}"


@ci(150)
@given(st.integers(0, len(SEEDS[N001])))
@example(_after(SEEDS[N001], "引用英伟达“从一个到三个缩放定律”"))  # mid-summary, after a quote
@example(_after(SEEDS[N001], "\nMPS in PyTorch 2.15\n"))  # after a title line
def test_prefix_of_topic_list(k: int) -> None:
    """Topic list (no footer): whole pairs before the cut are emitted exactly; the cut one
    is rejected, or emitted only if its summary is a prefix ending at a sentence end."""
    seed = SEEDS[N001]
    full = {i["summary_zh"]: i for i in full_run(N001).items}
    spans = _line_spans(seed)
    pairs = [(spans[i], spans[i + 1]) for i in range(2, len(spans) - 1, 2)]
    summaries = [seed[s[0] : s[1]].decode() for _, s in pairs]
    assert set(summaries) == set(full)
    whole = {s for (_, (_, end)), s in zip(pairs, summaries, strict=True) if end <= k}
    cut = cli_run({N001: seed[:k]})
    tag_outcomes(cut)
    if cut.file_rejects(N001):
        assert not whole, f"cut at {k}: whole file rejected with whole entries before the cut"
        return
    extra = _check_cut_entry(cut, N001, full, whole, k)
    rejects = cut.listing_rejects(N001)
    assert len(rejects) + len(extra) <= 1, f"cut at {k}: {rejects} {extra}"
    cut_pair = next(((t, s) for t, s in pairs if t[0] < k and s[1] > k), None)
    if cut_pair is not None and k > cut_pair[0][0]:  # part of an entry is in the file
        assert len(rejects) + len(extra) == 1, f"cut at {k}: the cut entry has no outcome"
    for r in rejects:
        assert r["reason"] in {"TRUNCATED_ITEM", "INVALID_UTF8", "MISSING_FIELD", "PAIRING_ERROR"}


@ci(150)
@given(st.integers(0, len(SEEDS[N004])))
@example(_after(SEEDS[N004], "前置条件为 PyTorch v1."))  # mid-summary, after a version's '.'
@example(_after(SEEDS[N004], "（OutRival）\n"))  # after a related entry's title line
def test_prefix_of_item_page(k: int) -> None:
    """Item page (no footer): the main entry and whole related entries are emitted exactly;
    the cut entry is rejected, or emitted only as a prefix ending at a sentence end."""
    seed = SEEDS[N004]
    full = {i["summary_zh"]: i for i in full_run(N004).items}
    spans = _line_spans(seed)
    entries = [(spans[1], spans[3])] + [(spans[i], spans[i + 2]) for i in range(9, 27, 3)]
    summaries = [seed[s[0] : s[1]].decode() for _, s in entries]
    assert set(summaries) == set(full)
    whole = {s for (_, (_, end)), s in zip(entries, summaries, strict=True) if end <= k}
    cut = cli_run({N004: seed[:k]})
    tag_outcomes(cut)
    if k < spans[4][1]:  # before the first '- 分级' line: no item-page signal yet (B8)
        assert not cut.items and (cut.file_rejects(N004) or not cut.listing_rejects(N004))
        return
    assert not cut.file_rejects(N004), f"cut at {k}"
    extra = _check_cut_entry(cut, N004, full, whole, k)
    rejects = cut.listing_rejects(N004)
    assert len(rejects) + len(extra) <= 1, f"cut at {k}: {rejects} {extra}"
    cut_entry = next(((a, b) for a, b in entries if a[0] < k and b[1] > k), None)
    if cut_entry is not None:
        assert len(rejects) + len(extra) == 1, f"cut at {k}: the cut entry has no outcome"
    allowed = {"TRUNCATED_ITEM", "INVALID_UTF8", "MISSING_FIELD", "PAIRING_ERROR"}
    # ITEM_MALFORMED (a 2-line chunk at EOF) and UNEXPECTED_LINE (cut inside the k/v block
    # or the '推荐阅读' heading) are what the item-page parser reports for a cut here.
    allowed |= {"ITEM_MALFORMED", "UNEXPECTED_LINE"}
    for r in rejects:
        assert r["reason"] in allowed, r


# --------------------------------------------------------------------------- 3. isolation


def _masked(records: list[dict[str, Any]], name: str, drop: set[str]) -> dict[str, str]:
    """Records by id (or slug) as canonical JSON, with the corrupted file's sha256 and byte
    offsets masked (any edit changes them), the ids in ``drop`` removed from ``related``
    (an item-page's own item names its related entries) and topics' item lists dropped."""
    out = {}
    for r in records:
        r = json.loads(json.dumps(r))
        for s in r.get("sources", []):
            if s["file"] == name:
                s["sha256"] = s["byte_offset"] = "*"
        if "related" in r:
            r["related"] = [x for x in r["related"] if x not in drop]
        if "slug" in r:
            r.pop("items")
        out[r.get("id") or r["slug"]] = json.dumps(r, ensure_ascii=False, sort_keys=True)
    return out


def _diff(a: str, b: str) -> dict[str, tuple[Any, Any]]:
    x, y = json.loads(a), json.loads(b)
    return {k: (x.get(k), y.get(k)) for k in sorted(set(x) | set(y)) if x.get(k) != y.get(k)}


def _check_isolation(name: str, corrupted: bytes, locators: set[str]) -> Snapshot:
    """Run the three seeds with ``name`` replaced; only the listing at ``locators`` may change."""
    clean = clean_batch()
    snap = cli_run({**SEEDS, name: corrupted})
    tag_outcomes(snap)

    def touches(item: dict[str, Any]) -> bool:
        return any(s["file"] == name and s["locator"] in locators for s in item["sources"])

    affected = {i["id"] for i in clean.items if touches(i)}
    assert affected, "the corrupted listing has no item in the clean run"
    affected |= {i["id"] for i in snap.items if touches(i)}
    before, after = _masked(clean.items, name, affected), _masked(snap.items, name, affected)
    for item_id, line in before.items():
        if item_id not in affected:
            assert item_id in after, f"item {item_id} lost: {line[:300]}"
            assert after[item_id] == line, f"item {item_id} changed: {_diff(line, after[item_id])}"
    for i in snap.items:
        assert i["id"] in before or touches(i), (
            f"new item {i['title_zh']!r}: {i['summary_zh'][:60]}"
        )
    assert _masked(snap.topics, name, set()) == _masked(clean.topics, name, set())
    # ... and the corrupted listing itself still has an outcome (P1: nothing vanishes)
    outcome = [i for i in snap.items if touches(i)] + [
        r for r in snap.listing_rejects(name) if r["locator"] in locators
    ]
    assert outcome, f"the corrupted listing ({sorted(locators)}) vanished without a trace"
    return snap


def _head_parts(text: str, n: int) -> dict[str, int]:
    """Character offsets of listing n's parts in the flattened topic page."""
    start = text.index(f"{n}. [", 0 if n == 1 else text.index(f" {n - 1}. [") + 1)
    close = text.index("]()（", start)
    meta_open = close + 3
    meta_close = text.index("）：", meta_open)
    nxt = text.find(f" {n + 1}. [", meta_close)
    end = nxt if nxt != -1 else text.index(" --- ")
    return {"start": start, "close": close, "meta": meta_open, "colon": meta_close + 1, "end": end}


def _corrupt_000(text: str, n: int, how: str) -> bytes:
    p = _head_parts(text, n)
    mid = (p["colon"] + 1 + p["end"]) // 2
    if how == "invalid_utf8":
        return text[:mid].encode() + b"\xff" + text[mid:].encode()
    if how == "no_close_bracket":
        text = text[: p["close"]] + text[p["close"] + 1 :]
    elif how == "no_meta":
        text = text[: p["meta"]] + text[p["colon"] :]
    elif how == "no_summary":
        text = text[: p["colon"] + 1] + text[p["end"] :]
    elif how == "controls":
        text = text[:mid] + "\x07\x00\u202e\u200b" + text[mid:]
    elif how == "ansi":
        text = text[:mid] + "\x1b[31m" + text[mid:]
    return text.encode()


@ci(100)
@given(
    st.integers(1, 44),
    st.sampled_from(
        ["invalid_utf8", "no_close_bracket", "no_meta", "no_summary", "controls", "ansi"]
    ),
)
def test_isolation_topic_page_listing(n: int, how: str) -> None:
    text = SEEDS[N000].decode()
    _check_isolation(N000, _corrupt_000(text, n, how), {f"listing {n}"})


def _corrupt_lines(seed: bytes, title: int, summary: int, how: str) -> bytes:
    """Corrupt one entry of a line page (0-based line indexes), keeping the line count."""
    lines = seed.decode().split("\n")
    s = lines[summary]
    if how == "invalid_utf8":
        raw = [x.encode() for x in lines]
        raw[summary] = s[:20].encode() + b"\xff" + s[20:].encode()
        return b"\n".join(raw)
    if how == "controls":
        lines[summary] = s[:20] + "\x07\x00\u202e\u200b" + s[20:]
    elif how == "no_summary":
        lines[summary] = ""
    elif how == "no_title":
        lines[title] = ""
    return "\n".join(lines).encode()


LINE_CORRUPTIONS = ["invalid_utf8", "controls", "no_summary", "no_title"]


@ci(40)
@given(st.integers(0, 18), st.sampled_from(LINE_CORRUPTIONS))
@example(4, "no_summary")  # entry 5, "Same GPU, 50% More Output ..." = topic page #5
def test_isolation_topic_list_entry(entry: int, how: str) -> None:
    title, summary = 2 + 2 * entry, 3 + 2 * entry  # 0-based line indexes
    corrupted = _corrupt_lines(SEEDS[N001], title, summary, how)
    _check_isolation(N001, corrupted, {f"line {title + 1}", f"line {summary + 1}"})


@ci(24)
@given(st.integers(1, 6), st.sampled_from(LINE_CORRUPTIONS))
@example(3, "no_summary")  # related 3, "用一个 Hub Bucket 传输万亿参数" = topic page #37
def test_isolation_item_page_related_entry(entry: int, how: str) -> None:
    title, summary = 9 + 3 * (entry - 1), 11 + 3 * (entry - 1)
    corrupted = _corrupt_lines(SEEDS[N004], title, summary, how)
    _check_isolation(N004, corrupted, {f"related {entry}"})
