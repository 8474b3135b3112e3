"""``ingest check FIXTURE``: a site's own pages against the records it expects of them
(the fixture's layout: ``ingest check --help``). The pages are run in memory; records hold
no clock and name their files relative to ``pages/``, so nothing volatile is compared.
"""

from __future__ import annotations

import datetime as dt
import difflib
import errno
import json
import os
import stat
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import msgspec
from msgspec import structs

from ingest.contract import Item, Reject, Topic, jsonl, to_builtins
from ingest.errors import UsageError
from ingest.extract.discover import collect_inputs
from ingest.job import JobOptions, compute
from ingest.normalize.ages import crawl_day
from ingest.pipeline.steps import Context
from ingest.publish.folder import atomic_write_bytes
from ingest.state.previous import Previous, RunSettings

EXPECTED: dict[str, type[msgspec.Struct]] = {
    "items.jsonl": Item,
    "topics.jsonl": Topic,
    "rejects.jsonl": Reject,
}
Record = dict[str, Any]


@dataclass(slots=True)
class Difference:
    """What a check found: the lines of the review, and its counts."""

    lines: list[str] = field(default_factory=list)
    counts: dict[str, int] = field(default_factory=dict)

    @property
    def equal(self) -> bool:
        return not any(self.counts.values())

    def summary(self) -> str:
        said = ", ".join(
            f"{n} {what.replace('s ', ' ', 1) if n == 1 else what}"
            for what, n in self.counts.items()
            if n
        )
        return f"check: {said or 'the records are the expected ones'}"

    def text(self) -> str:
        return "\n".join([*self.lines, self.summary()])


def check(fixture: Path, update: bool = False) -> Difference:
    """Run the fixture's pages and compare their records with the expected ones; with
    ``update``, write them as the expected ones (the difference is then what changed)."""
    pages, expected, day = _opened(fixture, update)
    found = _records(pages, day)
    before = {name: _before(expected / name, update) for name in EXPECTED}
    diff = compare(before, {n: [to_builtins(r) for r in found[n]] for n in EXPECTED})
    if update:
        expected.mkdir(exist_ok=True)
        for name in EXPECTED:
            atomic_write_bytes(expected / name, b"".join(jsonl(found[name])))
    return diff


def _before(path: Path, update: bool) -> list[Record]:
    """The expected records of a file; for ``--update``, none where none read (it writes
    them anew)."""
    try:
        return _read_expected(path)
    except UsageError:
        if not update:
            raise
        return []


def _opened(fixture: Path, update: bool) -> tuple[Path, Path, dt.date | None]:
    """The fixture's pages, expected records and crawl day; one-line errors for a fixture
    that is not one."""
    if not fixture.is_dir():
        raise UsageError(f"fixture {str(fixture)!r} is not a folder")
    _within(fixture)
    pages, expected = fixture / "pages", fixture / "expected"
    if not pages.is_dir():
        raise UsageError(f"fixture {str(fixture)!r} has no pages/ folder of pages to run")
    if not any(pages.iterdir()):
        raise UsageError(f"fixture {str(fixture)!r}: its pages/ holds no page to run")
    if expected.is_symlink():
        raise UsageError(
            f"fixture {str(fixture)!r}: expected is a link; it must be a folder of its own"
        )
    if os.path.lexists(expected) and not expected.is_dir():
        raise UsageError(f"fixture {str(fixture)!r}: expected is not a folder")
    if not update and not expected.is_dir():
        raise UsageError(
            f"fixture {str(fixture)!r} has no expected/ folder; write it once with: "
            f"ingest check {fixture} --update"
        )
    return pages, expected, _crawl_day(fixture / "fixture.json")


def _within(fixture: Path) -> None:
    """No link in the fixture leads outside it (its pages would not be its own)."""
    root = fixture.resolve()
    for here, folders, files in os.walk(fixture):
        for name in [*folders, *files]:
            path = Path(here, name)
            if not path.is_symlink():
                continue
            try:
                target = path.resolve()
            except (OSError, RuntimeError):  # a loop of links (Python < 3.13 raises)
                raise UsageError(
                    f"fixture {str(fixture)!r}: {path.relative_to(fixture)} is a link that "
                    "leads nowhere (a loop of links)"
                ) from None
            if not target.is_relative_to(root):
                raise UsageError(
                    f"fixture {str(fixture)!r}: {path.relative_to(fixture)} is a link to "
                    f"{str(path.resolve())!r}, outside the fixture"
                )


def _crawl_day(path: Path) -> dt.date | None:
    if not path.exists():
        return None
    try:
        doc = json.loads(_regular_bytes(path))
        if not isinstance(doc, dict):
            raise ValueError("not a JSON object")
        day = doc.get("crawled_at")
        found = crawl_day(day) if isinstance(day, str) else None
        if day is not None and found is None:
            raise ValueError(f"crawled_at {day!r} is not a day YYYY-MM-DD")
        return found
    except (OSError, ValueError, TypeError, RecursionError) as e:
        why = e.strerror if isinstance(e, OSError) and e.strerror else e
        raise UsageError(
            f'{path}: not a fixture file ({why}); it holds {{"crawled_at": "YYYY-MM-DD"}}'
        ) from None


def _records(pages: Path, day: dt.date | None) -> dict[str, list[Any]]:
    """The records ``ingest run`` makes of the pages, as a first publish; a reject's
    message names a path inside the fixture relative to it (not where the fixture is)."""
    inputs = collect_inputs([str(pages)])
    ctx = Context.building_on(Previous(), RunSettings("snapshot", day))
    output = compute(JobOptions([str(pages)], pages), list(inputs), ctx)
    roots = sorted({str(pages.parent.resolve()), str(pages.parent.absolute())}, key=len)
    rejects = []
    for r in output.rejects:
        message = r.message
        for root in reversed(roots):
            message = message.replace(root + os.sep, "")
        rejects.append(r if message == r.message else structs.replace(r, message=message))
    return dict(zip(EXPECTED, (output.items, output.topics, rejects), strict=True))


def _read_expected(path: Path) -> list[Record]:
    """The expected records of one file, each checked against the contract."""
    try:
        data = _regular_bytes(path)
    except OSError as e:
        raise UsageError(f"{path}: cannot be read ({e.strerror or e})") from None
    out = []
    for n, line in enumerate(data.splitlines(), 1):
        if not line.strip():
            continue  # a blank line holds no record
        try:
            out.append(msgspec.to_builtins(msgspec.json.decode(line, type=EXPECTED[path.name])))
        except (msgspec.DecodeError, RecursionError) as e:
            raise UsageError(f"{path}: line {n}: not a record of this ingest: {e}") from None
    return out


def _regular_bytes(path: Path) -> bytes:
    """The bytes of a regular file (a FIFO or a device would block the read or never end)."""
    with open(path, "rb", opener=lambda p, flags: os.open(p, flags | os.O_NONBLOCK)) as f:
        if not stat.S_ISREG(os.fstat(f.fileno()).st_mode):
            raise OSError(errno.EINVAL, "not a regular file")
        return f.read()


def compare(expected: Mapping[str, list[Record]], found: Mapping[str, list[Record]]) -> Difference:
    """The difference between two sets of records, as a review reads it."""
    diff = Difference(counts=dict.fromkeys(_COUNTED, 0))
    for name, key, entity in (("items.jsonl", "id", "item"), ("topics.jsonl", "slug", "topic")):
        _records_diff(diff, entity, _by(expected[name], key), _by(found[name], key))
    _rejects_diff(diff, expected["rejects.jsonl"], found["rejects.jsonl"])
    return diff


_COUNTED = (
    *(f"{what} {how}" for what in ("items", "topics") for how in ("changed", "added", "gone")),
    "rejects added",
    "rejects gone",
)


def _by(records: list[Record], key: str) -> dict[str, Record]:
    return {str(r.get(key)): r for r in records}


def _records_diff(
    diff: Difference, entity: str, expected: dict[str, Record], found: dict[str, Record]
) -> None:
    for key in sorted(expected.keys() | found.keys()):
        old, new = expected.get(key), found.get(key)
        if old == new:
            continue
        if old is None or new is None:
            which = "added" if old is None else "gone"
            diff.counts[f"{entity}s {which}"] += 1
            diff.lines.append(f"{entity} {key}{_title(old or new)}: {which}")
            continue
        diff.counts[f"{entity}s changed"] += 1
        diff.lines.append(f"{entity} {key}{_title(new)}:")
        for name in sorted(old.keys() | new.keys()):
            if old.get(name) != new.get(name):
                diff.lines.extend(_field(name, old.get(name), new.get(name)))


def _title(record: Record | None) -> str:
    record = record or {}
    title = record.get("title_zh") or record.get("title_original") or record.get("name")
    return f" ({title})" if title else ""


def _field(name: str, old: Any, new: Any) -> Iterator[str]:
    if _records_list(old) and _records_list(new) and len(old) == len(new):
        for n, (x, y) in enumerate(zip(old, new, strict=True)):
            said = [
                f"{k} {_shown(x.get(k))} → {_shown(y.get(k))}"
                for k in x | y
                if x.get(k) != y.get(k)
            ]
            if said:
                yield f"  {name}[{n}]: " + ", ".join(said)
        return
    a, b = _shown(old), _shown(new)
    yield f"  {name}:"
    yield f"    expected: {a}"
    yield f"    found:    {b}"
    if "\n" not in a + b and isinstance(old, str) and isinstance(new, str):
        yield f"    marked:   {marked(a, b)}"


def _records_list(value: Any) -> bool:
    return isinstance(value, list) and all(isinstance(x, dict) for x in value)


def _shown(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def marked(old: str, new: str) -> str:
    """``new`` with what differs from ``old`` marked: ``[-gone-]`` and ``{+new+}``.

    >>> marked("Hugging Face", "Hugging Face Inc")
    'Hugging Face{+ Inc+}'
    """
    out = []
    for op, i, j, k, m in difflib.SequenceMatcher(None, old, new, autojunk=False).get_opcodes():
        if op == "equal":
            out.append(old[i:j])
        if op in ("delete", "replace"):
            out.append(f"[-{old[i:j]}-]")
        if op in ("insert", "replace"):
            out.append(f"{{+{new[k:m]}+}}")
    return "".join(out)


def _rejects_diff(diff: Difference, expected: list[Record], found: list[Record]) -> None:
    def key(r: Record) -> str:
        return json.dumps(r, sort_keys=True, ensure_ascii=False)

    old, new = {key(r): r for r in expected}, {key(r): r for r in found}
    for which, these, others in (("gone", old, new), ("added", new, old)):
        for k in sorted(these.keys() - others.keys()):
            r = these[k]
            diff.counts[f"rejects {which}"] += 1
            diff.lines.append(
                f"reject {which}: {r.get('file')}: {r.get('locator')}: {r.get('reason')}: "
                f"{r.get('message')}"
            )
