"""run_steps: the one loop both engines share."""

from __future__ import annotations

import weakref
from typing import Any

from ingest.engines.local import LocalEngine
from ingest.steps import Context, Step, run_steps


class Collection(list[Any]):
    """A list that can be watched with a weak reference."""

    __slots__ = ("__weakref__",)


class WatchingEngine(LocalEngine):
    """The local engine, noting which earlier collections are still alive at each step."""

    def __init__(self) -> None:
        super().__init__()
        self.made: dict[str, weakref.ref[Collection]] = {}
        self.alive_at: dict[str, set[str]] = {}

    def source(self, records: list[Any]) -> Collection:
        return self._keep("inputs", Collection(records))

    def map(self, records: list[Any], step: Step, ctx: Context) -> Collection:
        self.alive_at[step.name] = {n for n, ref in self.made.items() if ref() is not None}
        return self._keep(step.writes, Collection(super().map(records, step, ctx)))

    def _keep(self, name: str, c: Collection) -> Collection:
        self.made[name] = weakref.ref(c)
        return c


def _double(x: int, ctx: Context) -> list[int]:
    return [2 * x]


def test_a_collection_is_let_go_once_its_last_reader_is_done() -> None:
    steps = (
        Step("a", "map", "inputs", "xs", _double),
        Step("b", "map", "xs", "ys", _double),
        Step("c", "map", "xs", "zs", _double),  # the last reader of xs
        Step("d", "map", "ys", "ws", _double),
        Step("e", "map", "zs", "vs", _double),
    )
    engine = WatchingEngine()
    run_steps(engine, [1, 2], steps=steps)
    assert engine.alive_at == {
        "a": {"inputs"},
        "b": {"xs"},  # inputs: read by a alone
        "c": {"xs", "ys"},
        "d": {"ys", "zs"},  # xs: gone after c
        "e": {"zs", "ws"},  # ys: gone after d
    }


def test_summary_keys_travel_once_a_batch_from_the_first_listing_that_has_them() -> None:
    from ingest.records.internal import Listing, Provenance
    from ingest.steps.functions import by_summary

    def listing(key: str) -> Listing:
        return Listing(Provenance("f", "s", "topic-page", "listing 1", 0, 1), 0, key, key=key)

    batch = [listing(k) for k in ("a", "b", "a", "c", "b")]
    assert by_summary(batch, Context()) == [[("a", None)], [("b", None)], [], [("c", None)], []]
