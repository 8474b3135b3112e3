"""Record quality on the labelled cases: precision and recall per decision kind.

The cases (``tests/eval/cases/*.case``, written by hand from the seeds' shapes) say what each
page and each listing on it really is: which resource (``tests/eval/pool.txt``), which
topic. Each case is rendered into dump files, ``ingest run`` (the real command line) runs
on them, and every decision the output makes is compared with the labels:

- ``title``: for every listing, the original title its item carries. The truth is the
  resource's original title when any page of the case shows it (a Chinese original shown on
  an item page: its Chinese title), else none. A wrong title counts against precision, a
  missing one against recall.
- ``resource``: for every pair of listings, whether they ended in one item. Pairs of one
  resource, and pairs of different resources that share a Chinese title or have summaries
  at least 60 % alike, are the decisions counted; precision and recall are over all pairs.
- ``topic``: for every pair of topic pages and topic lists, whether they ended in one topic.
- ``slug``: for every such page whose topic's slug is labelled, whether it got that slug.

    .venv/bin/python bench/eval.py            # the table
    .venv/bin/python bench/eval.py --check    # exit 1 below a floor of tests/eval/floors.json
    .venv/bin/python bench/eval.py --pin      # raise the floors to today's figures (never lower)
    .venv/bin/python bench/eval.py --errors   # also list every wrong decision
"""

from __future__ import annotations

import argparse
import itertools
import json
import math
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rapidfuzz import fuzz

sys.path.insert(0, str(Path(__file__).resolve().parent))
from eval_cases import CASES, Case, Rendered, load_cases, render
from ingest.cli import main as ingest_main
from ingest.normalize.text import match_key

ROOT = Path(__file__).resolve().parent.parent
FLOORS = ROOT / "tests" / "eval" / "floors.json"
KINDS = ("title", "resource", "topic", "slug")
CONFUSABLE_RATIO = 60.0


@dataclass
class Score:
    """Counts of one decision kind."""

    tp: int = 0
    fp: int = 0
    fn: int = 0
    decisions: int = 0
    errors: list[str] = field(default_factory=list)

    @property
    def precision(self) -> float:
        return self.tp / (self.tp + self.fp) if self.tp + self.fp else 1.0

    @property
    def recall(self) -> float:
        return self.tp / (self.tp + self.fn) if self.tp + self.fn else 1.0


def run_case(case: Case, folder: Path) -> dict[str, Any]:
    """Render one case, run ``ingest run`` on it, and return what came out."""
    inputs = folder / "in"
    rendered = render(case, inputs)
    out = folder / "out"
    code = ingest_main(["run", str(inputs), "--out", str(out), "--quiet"])
    if code != 0:
        raise SystemExit(f"case {case.name}: ingest run exited {code}")

    def lines(name: str) -> list[dict[str, Any]]:
        return [json.loads(x) for x in (out / name).read_text("utf-8").splitlines()]

    return {"rendered": rendered, "items": lines("items.jsonl"), "topics": lines("topics.jsonl")}


def item_of(rendered: Rendered, items: list[dict[str, Any]]) -> dict[int, dict[str, Any]]:
    """Listing number (in rendered.listings) → the item its source ended in."""
    out: dict[int, dict[str, Any]] = {}
    for item in items:
        for s in item["sources"]:
            n = rendered.find(s["file"], s["locator"], s["line"])
            if n is not None:
                out[n] = item
    return out


def score_case(case: Case, result: dict[str, Any], scores: dict[str, Score]) -> None:
    rendered: Rendered = result["rendered"]
    items = item_of(rendered, result["items"])
    _titles(case, rendered, items, scores["title"])
    _resources(case, rendered, items, scores["resource"])
    _topics(case, rendered, result["topics"], scores["topic"], scores["slug"])


def _count(score: Score, truth: bool, said: bool, what: str) -> None:
    if truth and said:
        score.tp += 1
    elif said:
        score.fp += 1
        score.errors.append(f"wrongly: {what}")
    elif truth:
        score.fn += 1
        score.errors.append(f"missed: {what}")


def _titles(case: Case, r: Rendered, items: dict[int, dict[str, Any]], score: Score) -> None:
    for n, x in enumerate(r.listings):
        truth = r.true_title(x.resource)
        got = items[n]["title_original"] if n in items else None
        score.decisions += 1
        where = f"{case.name}: {x.file} {x.where} ({x.resource}) title {got!r}, truth {truth!r}"
        if got is not None and got != truth:
            score.fp += 1
            score.fn += truth is not None
            score.errors.append(f"wrongly: {where}")
        else:
            _count(score, truth is not None, got is not None, where)


def _resources(case: Case, r: Rendered, items: dict[int, dict[str, Any]], score: Score) -> None:
    for (i, a), (j, b) in itertools.combinations(enumerate(r.listings), 2):
        truth = a.resource == b.resource
        said = i in items and j in items and items[i]["id"] == items[j]["id"]
        score.decisions += truth or _confusable(a.title_zh, b.title_zh, a.summary, b.summary)
        what = f"{case.name}: {a.file} {a.where} ({a.resource}) ~ {b.file} {b.where} ({b.resource})"
        _count(score, truth, said, what)


def _confusable(ta: str | None, tb: str | None, sa: str, sb: str) -> bool:
    same_title = ta is not None and ta == tb
    return same_title or fuzz.ratio(match_key(sa), match_key(sb)) >= CONFUSABLE_RATIO


def _topics(
    case: Case, r: Rendered, topics: list[dict[str, Any]], score: Score, slugs: Score
) -> None:
    slug_of = {s["file"]: t["slug"] for t in topics for s in t["sources"]}
    for a, b in itertools.combinations(r.topic_files, 2):
        score.decisions += 1
        truth = a.topic == b.topic
        said = a.file in slug_of and slug_of.get(a.file) == slug_of.get(b.file)
        _count(score, truth, said, f"{case.name}: {a.file} ({a.topic}) ~ {b.file} ({b.topic})")
    for p in r.topic_files:
        want = case.topics[p.topic].slug
        if want != "*":
            slugs.decisions += 1
            got = slug_of.get(p.file)
            what = f"{case.name}: {p.file} slug {got!r}, truth {want!r}"
            _count(slugs, True, got == want, what)


def evaluate(paths: list[Path] | None = None) -> dict[str, Score]:
    scores = {k: Score() for k in KINDS}
    cases = load_cases(paths or sorted(CASES.glob("*.case")))
    with tempfile.TemporaryDirectory() as tmp:
        for n, case in enumerate(cases):
            folder = Path(tmp) / str(n)
            score_case(case, run_case(case, folder), scores)
    return scores


def figures(scores: dict[str, Score]) -> dict[str, dict[str, float]]:
    return {
        k: {"precision": s.precision, "recall": s.recall, "decisions": float(s.decisions)}
        for k, s in scores.items()
    }


def below(measured: dict[str, dict[str, float]], floors: dict[str, dict[str, float]]) -> list[str]:
    """Every figure under its floor, as a line to print."""
    return [
        f"{kind} {metric}: {measured[kind][metric]:.3f} < floor {floor:.3f}"
        for kind, fl in sorted(floors.items())
        for metric, floor in sorted(fl.items())
        if measured.get(kind, {}).get(metric, -1.0) < floor
    ]


def pinned(
    old: dict[str, dict[str, float]], measured: dict[str, dict[str, float]]
) -> dict[str, dict[str, float]]:
    """New floors: each the higher of the old floor and today's figure (rounded down).
    Re-pinning can only raise a floor; lowering one means editing the file by hand, and the
    review of that diff."""
    out: dict[str, dict[str, float]] = {}
    for kind in sorted(set(old) | set(measured)):
        metrics = set(old.get(kind, {})) | set(measured.get(kind, {}))
        out[kind] = {
            m: max(old.get(kind, {}).get(m, 0), _floor3(measured.get(kind, {}).get(m, 0)))
            for m in sorted(metrics)
        }
    return out


def _floor3(x: float) -> float:
    return math.floor(x * 1000) / 1000


def table(scores: dict[str, Score]) -> str:
    rows = [f"{'decision':<10} {'decisions':>9} {'precision':>9} {'recall':>7}   tp / fp / fn"]
    for k, s in scores.items():
        rows.append(
            f"{k:<10} {s.decisions:>9} {s.precision:>9.3f} {s.recall:>7.3f}"
            f"   {s.tp} / {s.fp} / {s.fn}"
        )
    rows.append(f"{'all':<10} {sum(s.decisions for s in scores.values()):>9}")
    return "\n".join(rows)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--check", action="store_true", help="exit 1 below a pinned floor")
    p.add_argument("--pin", action="store_true", help="raise the floors to today's figures")
    p.add_argument("--errors", action="store_true", help="list every wrong decision")
    p.add_argument("--floors", type=Path, default=FLOORS)
    args = p.parse_args(argv)
    scores = evaluate()
    print(table(scores))
    if args.errors:
        for k, s in scores.items():
            for e in s.errors:
                print(f"{k}: {e}")
    measured = figures(scores)
    floors = json.loads(args.floors.read_text("utf-8")) if args.floors.exists() else {}
    if args.pin:
        new = pinned(floors, measured)
        args.floors.write_text(json.dumps(new, indent=2, sort_keys=True) + "\n", "utf-8")
        print(f"floors written to {args.floors}")
        return 0
    failed = below(measured, floors)
    for line in failed:
        print(f"BELOW FLOOR: {line}")
    return 1 if args.check and failed else 0


if __name__ == "__main__":
    sys.exit(main())
