"""The tree reads as the pipeline: each layer imports only the layers before it.

records → reader → normalize → extract → state → transform → steps → engines → outputs →
job → schema → commands → cli.
``errors`` and the package's own ``__init__`` (versions) are below every layer; the
``__init__`` re-exports the reader (``from ingest import read_publish``), which sits just
above the records so that importing ``ingest`` loads nothing of the pipeline.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from conftest import ROOT

SRC = ROOT / "src" / "ingest"
LAYERS = [
    "records",
    "reader",
    "normalize",
    "extract",
    "state",
    "transform",
    "steps",
    "engines",
    "outputs",
    "job",
    "schema",
    "commands",
    "cli",
    "__main__",
]
BASE = {"errors", "__init__"}
#: What a base module may import besides the base: the package re-exports the reader.
PUBLIC = {"__init__": {"reader"}}
MAX_LINES = 300


def _layer(module: str) -> str:
    """The layer of an ingest module; a name that is no module of its own (``from .. import
    SCHEMA_VERSION``) belongs to the package's ``__init__``."""
    parts = module.split(".")
    if len(parts) < 2 or not ((SRC / parts[1]).is_dir() or (SRC / f"{parts[1]}.py").is_file()):
        return "__init__"
    return parts[1]


def _imports(path: Path, package: list[str]) -> list[tuple[int, str]]:
    """(line, imported ingest module) for every import of ingest's own code in ``path``,
    a module of ``package`` (e.g. ``["ingest", "transform"]``)."""
    out = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[: len(package) - node.level + 1]
                target = ".".join([*base, *(node.module or "").split(".")]).strip(".")
                names = [target] if node.module else [f"{target}.{a.name}" for a in node.names]
            else:
                names = [node.module or ""]
            out += [(node.lineno, n) for n in names if n.startswith("ingest")]
        elif isinstance(node, ast.Import):
            out += [(node.lineno, a.name) for a in node.names if a.name.startswith("ingest")]
    return out


def _modules() -> list[Path]:
    return sorted(SRC.rglob("*.py"))


@pytest.mark.parametrize("path", _modules(), ids=lambda p: str(p.relative_to(SRC)))
def test_imports_run_down_the_flow(path: Path) -> None:
    own = _layer("ingest." + ".".join(path.relative_to(SRC).with_suffix("").parts))
    if own in BASE:
        allowed: set[str] = BASE | PUBLIC.get(own, set())
    else:
        allowed = BASE | set(LAYERS[: LAYERS.index(own) + 1])
    package = list(path.relative_to(SRC.parent).parts[:-1])
    bad = [(line, m) for line, m in _imports(path, package) if _layer(m) not in allowed]
    assert not bad, f"{path.relative_to(SRC)} imports from a later layer: {bad}"


@pytest.mark.parametrize("path", _modules(), ids=lambda p: str(p.relative_to(SRC)))
def test_no_module_is_over_the_size_cap(path: Path) -> None:
    lines = len(path.read_text(encoding="utf-8").splitlines())
    assert lines <= MAX_LINES, f"{path.relative_to(SRC)} has {lines} lines"


def test_the_layer_check_sees_a_bad_import(tmp_path: Path) -> None:
    """The checker itself: imports running back up the flow are found, in every form."""
    probe = tmp_path / "probe.py"
    probe.write_text(
        "from ..transform import merge\nfrom ingest.steps import STEPS\nimport ingest.cli\n"
        "from .. import SCHEMA_VERSION\nfrom .internal import Listing\n",
        encoding="utf-8",
    )
    found = _imports(probe, ["ingest", "records"])
    assert found == [
        (1, "ingest.transform"),
        (2, "ingest.steps"),
        (3, "ingest.cli"),
        (4, "ingest.SCHEMA_VERSION"),
        (5, "ingest.records.internal"),
    ]
    assert [_layer(m) for _, m in found] == ["transform", "steps", "cli", "__init__", "records"]
