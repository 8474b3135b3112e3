"""Schemas: the JSON Schemas of the output, written by pydantic from a model made of each
msgspec record (in the form ``schemas/`` has had since the first release); a folder validated."""

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

from ingest import SCHEMA_VERSION
from ingest.contract import Change, Item, Out, Reject, Report, Topic
from ingest.errors import UsageError
from ingest.publish.door import KEEP, Opened, reading
from ingest.publish.folder import atomic_write_bytes
from ingest.records import FILES, PAGE

SCHEMA_NAMES: dict[str, type[Out]] = {
    r.__name__.lower(): r for r in (Item, Topic, Reject, Change, Report)
}
#: What a field's ``msgspec.Meta`` says that the schemas carry.
_META = ("ge", "le", "gt", "lt", "pattern", "min_length", "max_length", "description")


@cache
def model_of(record: type[Out]) -> type[BaseModel]:
    """The pydantic model of a record type (for its JSON Schema), unknown fields refused."""
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
        __config__=ConfigDict(extra="forbid", frozen=True, regex_engine="python-re"),
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
    """A field's type, each record in it replaced by its model and each ``Meta`` by a ``Field``."""
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


def validate_dir(folder: Path) -> tuple[str, list[str]]:
    """The schema version a publish declares, and the problems found in it (schemas, order,
    references, accounting); opened through the one door: every file there and whole."""
    problems: list[str] = []
    docs: dict[str, list[dict[str, Any]]] = {}

    def read(opened: Opened) -> tuple[dict[str, bytes], str, bool]:
        found = {name: opened.read(name) for name in FILES}
        declared = opened.marker.schema_version if opened.marker else ""
        return found, declared, not opened.legacy and PAGE not in opened.files

    found, marked, no_page = reading(folder, read, check=True)
    if no_page:
        problems.append(f"{folder / PAGE}: missing")
    declared = _declared(found["report.json"])
    for version in {marked or declared, declared}:
        if version.split(".")[0] != SCHEMA_VERSION.split(".")[0]:
            raise UsageError(
                f"{str(folder)!r} declares schema {version or '(none)'}; this ingest "
                f"validates schema {SCHEMA_VERSION.split('.')[0]}.x ({SCHEMA_VERSION})"
            )
    for fname, record in FILES.items():
        path, data = folder / fname, found[fname]
        validator = Draft202012Validator(model_of(record).model_json_schema(mode="serialization"))
        docs[fname] = list(_records(path, data, problems))
        for n, doc in enumerate(docs[fname], 1):
            for err in validator.iter_errors(doc):
                loc = "/".join(str(p) for p in err.absolute_path) or "(record)"
                problems.append(f"{path}: record {n}: {loc}: {err.message}")
    if not problems:
        problems.extend(_cross_checks(folder, docs))
    return declared, problems


def _declared(report: bytes) -> str:
    try:
        doc = json.loads(report)
    except (ValueError, RecursionError):
        return ""
    version = doc.get("schema_version") if isinstance(doc, dict) else None
    return version if isinstance(version, str) else ""


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
        except RecursionError:
            problems.append(f"{path}: line {n}: JSON nested too deep")
        except ValueError as e:  # a number of more digits than Python converts
            problems.append(f"{path}: line {n}: {str(e).split(';')[0]}")


def _cross_checks(folder: Path, docs: dict[str, list[dict[str, Any]]]) -> list[str]:
    items, topics = docs["items.jsonl"], docs["topics.jsonl"]
    problems = []
    for name, key in (("items.jsonl", "id"), ("topics.jsonl", "slug")):
        keys = [d[key] for d in docs[name]]
        if keys != sorted(set(keys)):
            problems.append(f"{folder}/{name}: {key}s not unique and sorted")
    known = {i["id"] for i in items}
    for i in items:
        bad = [r for r in i["related"] if r not in known]
        problems += [f"item {i['id']}: related id {r} not in items.jsonl" for r in bad]
    for t in topics:
        bad = [r for r in t["items"] if r not in known]
        problems += [f"topic {t['slug']}: item {r} not in items.jsonl" for r in bad]
    totals = docs["report.json"][0]["totals"]
    expect = {
        "items": len(items),
        "topics": len(topics),
        "rejects": len(docs["rejects.jsonl"]),
        "listings_merged": sum(len(i["sources"]) for i in items),
    }
    for k, v in expect.items():
        if totals[k] != v:
            problems.append(f"{folder}/report.json: totals.{k} is {totals[k]}, files hold {v}")
    if totals["listings"] != totals["listings_merged"] + totals["listings_rejected"]:
        problems.append(f"{folder}/report.json: listings != listings_merged + listings_rejected")
    return problems


def write_schemas(folder: Path) -> list[Path]:
    """Write the schemas into ``folder``: new, empty, or holding only schema files ingest
    wrote (each with its own ``$id``); anything else is refused before a file is written."""
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
    if path.name in KEEP and path.is_file():
        return True
    if path.name not in generated or path.is_symlink() or not path.is_file():
        return False
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError):
        return False
    return isinstance(doc, dict) and doc.get("$id") == path.name
