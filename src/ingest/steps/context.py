"""The context a run builds on and passes from step to step, and the shape of a step."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Hashable, Iterable
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

from ..records.internal import PageReject
from ..records.run import RunOutput
from ..state.ages import Ages
from ..state.index import IdIndex
from ..state.previous import Previous, RunSettings
from ..transform.components import Components
from ..transform.identity import Ids
from ..transform.near import Signed
from ..transform.records import Finished, Lid
from ..transform.topics import Routes, Topics
from ..transform.units import Edge
from .plan import Plan
from .reuse import Reuse


@dataclass(slots=True)
class Context:
    """What the run builds on, and the small values driver-side steps produce for the
    steps after them."""

    previous: Previous = field(default_factory=Previous)
    settings: RunSettings = field(default_factory=RunSettings)
    index: IdIndex = field(default_factory=IdIndex)  # the previous publish's items, indexed
    known: dict[str, str | None] = field(default_factory=dict)  # languages it decided
    ages: Ages = field(default_factory=Ages)  # crawl days and windows of earlier crawls
    reuse: Reuse | None = None  # what an earlier run computed, to take (steps.reuse)
    topics: Topics = field(default_factory=Topics)
    contested: frozenset[tuple[str, str]] = frozenset()  # topic pages whose versions differ?
    routes: Routes = field(default_factory=Routes)
    aside: list[PageReject] = field(default_factory=list)  # listings of pages set aside
    plan: Plan = field(default_factory=Plan)
    signed: list[Signed] = field(default_factory=list)
    near: list[Edge] = field(default_factory=list)
    order: dict[str, list[Edge]] = field(default_factory=dict)  # by topic
    components: Components = field(default_factory=Components)
    ids: Ids = field(default_factory=Ids)
    published: dict[str, str] = field(default_factory=dict)  # minted id → published id
    related: dict[Lid, str] = field(default_factory=dict)
    langs: dict[str, str | None] = field(default_factory=dict)
    parts: list[Finished] = field(default_factory=list)
    output: RunOutput | None = None

    def only(self, names: Iterable[str]) -> Context:
        """This context with just ``names`` (what a step shipped to workers needs); any
        other field is withheld, and using one is an error, never a silent default."""
        kept = set(names)
        fields: dict[str, Any] = {
            f: getattr(self, f) if f in kept else _Withheld(f) for f in _FIELDS
        }
        return Context(**fields)

    @classmethod
    def building_on(
        cls, previous: Previous, settings: RunSettings, reuse: Reuse | None = None
    ) -> Context:
        """The context of a run that builds on ``previous`` (taking from ``reuse``)."""
        known = {
            i.title_original: i.original_language
            for i in previous.items.values()
            if i.title_original
        }
        ages = Ages.of(previous, settings.crawled_at)
        return cls(previous, settings, IdIndex.of(previous), known, ages, reuse)


@dataclass(frozen=True, slots=True)
class Step:
    """One step of the run (see the module docstring)."""

    name: str
    kind: Literal["map", "group", "driver"]
    reads: str
    writes: str
    fn: Callable[..., Any]
    pairs: Callable[[Any, Context], Iterable[Any]] | None = None
    view: Callable[[Any], Any] | None = None  # the part of a record the step reads (small)
    gather: Callable[[list[Any], Context], Any] | None = None
    pool: bool = False  # costly per record: the local engine runs it in its process pool
    pool_from: int = 1  # ... when it has at least this many records or groups
    pool_groups: bool = True  # a group step's group functions too (else only its pairs)
    warm: Callable[[], None] | None = None  # loads what workers need, before they fork
    min_group: int = 1  # smaller groups give nothing and are never formed
    needs: tuple[str, ...] = ()  # the context fields its functions read on a worker
    batched: bool = False  # a list of views at once: map fn(views, ctx) → outputs;
    # group pairs(views, ctx) → one list of pairs per view
    progress: bool = False  # shown with a bar counting its inputs (else a spinner)
    # only later steps read its value (their ``needs`` name it): an engine may compute it
    # while it runs the steps after it (the local engine: in a forked child)
    background: bool = False


class _Withheld:
    """A context field a step did not declare it needs (see :meth:`Context.only`)."""

    def __init__(self, name: str) -> None:
        self.__dict__["name"] = name

    def __reduce__(self) -> tuple[type[_Withheld], tuple[str]]:
        return (_Withheld, (self.__dict__["name"],))

    def _refuse(self, *_: Any) -> Any:
        name = self.__dict__.get("name", "?")
        raise AttributeError(f"a step used ctx.{name} without declaring it in its needs")

    __getattr__ = __getitem__ = __contains__ = __iter__ = __len__ = _refuse


_FIELDS = tuple(f.name for f in dataclasses.fields(Context))


def formed_groups(
    batches: Iterable[Iterable[tuple[Hashable, Any]]], min_group: int = 1
) -> list[tuple[Any, list[Any]]]:
    """A group step's (key, value) pairs, given in batches, as its groups: (key, values)
    in key order, the values in the order given; groups smaller than ``min_group`` are not
    formed. What every engine does with the pairs once they are where it groups them."""
    groups: dict[Any, list[Any]] = {}
    for pairs in batches:
        for key, value in pairs:
            groups.setdefault(key, []).append(value)
    return sorted(g for g in groups.items() if len(g[1]) >= min_group)


class Engine(Protocol):
    """What an engine provides: collections, and the two ways to run a step on one."""

    def source(self, records: list[Any]) -> Any: ...

    def map(self, collection: Any, step: Step, ctx: Context) -> Any: ...

    def group(self, collection: Any, step: Step, ctx: Context) -> Any: ...

    def collect(self, collection: Any) -> list[Any]: ...

    def let_go(self, collection: Any) -> None:
        """A collection no later step reads, which the run drops (an engine that holds it
        elsewhere lets it go there)."""
        ...

    def start(self, collection: Any, step: Step, ctx: Context) -> Started | None:
        """Start computing a ``background`` step's value; None: it runs in turn."""
        ...


class Started(Protocol):
    """A background step's value being computed: ``result`` is (value, seconds)."""

    def result(self) -> tuple[Any, float]: ...

    def stop(self) -> None: ...
