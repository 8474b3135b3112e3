"""Schemas: generate the JSON Schemas of the output from its records; validate a folder.

The records are msgspec Structs (:mod:`.records.output`); their schemas are written by
pydantic, from a model made of each record (same name, docstring, fields, constraints and
descriptions), in the form ``schemas/`` has had since the first release.
"""

from __future__ import annotations

import json
import types
from collections.abc import Iterator
from functools import cache
from pathlib import Path
from typing import Annotated, Any, Union, get_args, get_origin

import msgspec
from jsonschema import Draft202012Validator
from pydantic import BaseModel, ConfigDict, Field, create_model

from .errors import UsageError
from .outputs.atomic import KEEP_FILES, atomic_write_bytes
from .outputs.published import read_consistent
from .records.output import Change, Item, Out, Reject, Report, Topic
from .records.run import FILES, PAGE

SCHEMA_NAMES: dict[str, type[Out]] = {
    "item": Item,
    "topic": Topic,
    "reject": Reject,
    "change": Change,
    "report": Report,
}
#: What a field's ``msgspec.Meta`` says that the schemas carry.
_META = ("ge", "le", "gt", "lt", "pattern", "min_length", "max_length", "description")


@cache
def model_of(record: type[Out]) -> type[BaseModel]:
    """The pydantic model of a record type (for its JSON Schema): fields, defaults,
    constraints, descriptions and docstring as the record has them; unknown fields refused."""
    fields: dict[str, Any] = {}
    for f in msgspec.structs.fields(record):
        kind, meta = _split(f.type)
        extra: dict[str, Any] = {}
        if f.default_factory is not msgspec.NODEFAULT:
            extra["default_factory"] = f.default_factory
        elif f.default is not msgspec.NODEFAULT:
            extra["default"] = f.default
        fields[f.name] = (_pydantic_type(kind), Field(**meta, **extra))
    return create_model(
        record.__name__,
        __config__=ConfigDict(extra="forbid", frozen=True),
        __doc__=record.__doc__,
        **fields,
    )


def _split(kind: Any) -> tuple[Any, dict[str, Any]]:
    """A field's type without its ``Annotated`` metadata, and what that metadata says."""
    if get_origin(kind) is not Annotated:
        return kind, {}
    base, *metas = get_args(kind)
    said = {k: v for m in metas for k in _META if (v := getattr(m, k, None)) is not None}
    return base, said


def _pydantic_type(kind: Any) -> Any:
    """A record field's type with each record in it replaced by its model and each
    ``Meta`` by the ``Field`` that says the same."""
    if isinstance(kind, type) and issubclass(kind, Out):
        return model_of(kind)
    origin, args = get_origin(kind), get_args(kind)
    if origin is Annotated:
        base, meta = _split(kind)
        return Annotated[_pydantic_type(base), Field(**meta)]
    if origin in (Union, types.UnionType):
        return Union[tuple(_pydantic_type(a) for a in args)]  # noqa: UP007
    if origin in (list, dict):
        return origin[tuple(_pydantic_type(a) for a in args)]
    return kind


def schemas() -> dict[str, bytes]:
    """``schemas/<name>.schema.json`` contents, generated from the output records."""
    out = {}
    for name, record in SCHEMA_NAMES.items():
        schema = model_of(record).model_json_schema(mode="serialization")
        schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
        schema["$id"] = f"{name}.schema.json"
        text = json.dumps(schema, indent=2, ensure_ascii=False, sort_keys=True) + "\n"
        out[f"{name}.schema.json"] = text.encode()
    return out


def validate_dir(folder: Path) -> list[str]:
    """Check a folder written by ``ingest run``: schemas, order, references, accounting —
    of one publish, even while a run replaces the folder (see ``read_consistent``)."""
    problems: list[str] = []
    docs: dict[str, list[dict[str, Any]]] = {}
    found = read_consistent(folder, [*FILES, PAGE])
    for fname, record in FILES.items():
        path, data = folder / fname, found[fname]
        if data is None:
            problems.append(f"{path}: missing")
            continue
        schema = model_of(record).model_json_schema(mode="serialization")
        validator = Draft202012Validator(schema)
        docs[fname] = list(_records(path, data, problems))
        for n, doc in enumerate(docs[fname], 1):
            for err in validator.iter_errors(doc):
                loc = "/".join(str(p) for p in err.absolute_path) or "(record)"
                problems.append(f"{path}: record {n}: {loc}: {err.message}")
    if found[PAGE] is None:
        problems.append(f"{folder / PAGE}: missing")
    if not problems:
        problems.extend(_cross_checks(folder, docs))
    return problems


def _records(path: Path, data: bytes, problems: list[str]) -> Iterator[dict[str, Any]]:
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        problems.append(f"{path}: unreadable: {e}")
        return
    chunks = [text] if path.suffix == ".json" else text.splitlines()
    for n, chunk in enumerate(chunks, 1):
        try:
            yield json.loads(chunk)
        except json.JSONDecodeError as e:
            problems.append(f"{path}: line {n}: not JSON: {e.msg}")


def _cross_checks(folder: Path, docs: dict[str, list[dict[str, Any]]]) -> list[str]:
    items, topics = docs["items.jsonl"], docs["topics.jsonl"]
    report = docs["report.json"][0]
    ids = [i["id"] for i in items]
    problems = []
    if ids != sorted(set(ids)):
        problems.append(f"{folder}/items.jsonl: ids not unique and sorted")
    slugs = [t["slug"] for t in topics]
    if slugs != sorted(set(slugs)):
        problems.append(f"{folder}/topics.jsonl: slugs not unique and sorted")
    known = set(ids)
    for i in items:
        problems += [
            f"item {i['id']}: related id {r} not in items.jsonl"
            for r in i["related"]
            if r not in known
        ]
    for t in topics:
        problems += [
            f"topic {t['slug']}: item {r} not in items.jsonl" for r in t["items"] if r not in known
        ]
    totals = report["totals"]
    merged = sum(len(i["sources"]) for i in items)
    expect = {
        "items": len(items),
        "topics": len(topics),
        "rejects": len(docs["rejects.jsonl"]),
        "listings_merged": merged,
    }
    for k, v in expect.items():
        if totals[k] != v:
            problems.append(f"{folder}/report.json: totals.{k} is {totals[k]}, files hold {v}")
    if totals["listings"] != totals["listings_merged"] + totals["listings_rejected"]:
        problems.append(f"{folder}/report.json: listings != listings_merged + listings_rejected")
    return problems


def write_schemas(folder: Path) -> list[Path]:
    """Write the schemas into ``folder``, replacing only schema files ingest wrote there.

    The folder may be new, empty, or hold ingest's schema files (each with its own
    ``$id``); anything else in it is refused before a file is written.
    """
    generated = schemas()
    if folder.exists() and not folder.is_dir():
        raise UsageError(f"--dir {str(folder)!r} exists and is not a folder")
    if folder.is_dir():
        foreign = [p.name for p in sorted(folder.iterdir()) if not _ours(p, generated)]
        if foreign:
            shown = ", ".join(repr(n) for n in foreign[:5])
            raise UsageError(
                f"--dir {str(folder)!r} holds {len(foreign)} file(s) ingest did not write "
                f"({shown}); name a new or empty folder"
            )
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise UsageError(f"cannot create {str(folder)!r}: {e.strerror}") from e
    for name, data in generated.items():
        atomic_write_bytes(folder / name, data)
    return [folder / name for name in generated]


def _ours(path: Path, generated: dict[str, bytes]) -> bool:
    """A schema file ingest wrote (its name and its ``$id`` agree), or a git keep file."""
    if path.name in KEEP_FILES and path.is_file():
        return True
    if path.name not in generated or path.is_symlink() or not path.is_file():
        return False
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError):
        return False
    return isinstance(doc, dict) and doc.get("$id") == path.name
