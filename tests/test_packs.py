"""The state's page packs, through ``ingest run``: a first publish packs every page once, a
rerun packs only the pages no earlier pack holds, and every page a pack is said to hold is
the bytes of that sha256."""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path
from typing import Any

from conftest import SEEDS, TOPIC_LIST


def packed(out: Path) -> dict[str, list[str]]:
    """Each pack of the publish and the files it holds, every page checked by its sha256."""
    manifest = json.loads((out / "state" / "manifest.json").read_bytes())
    held: dict[str, list[str]] = {}
    for ref in manifest["pages"]:
        data = (out / "state" / ref["pack"]).read_bytes()[
            ref["offset"] : ref["offset"] + ref["size"]
        ]
        assert hashlib.sha256(data).hexdigest() == ref["sha256"], ref
        held.setdefault(ref["pack"], []).append(ref["file"])
    return held


def test_a_first_publish_packs_every_page_once(ingest: Any, tmp_path: Path) -> None:
    dumps = tmp_path / "dumps"
    shutil.copytree(SEEDS, dumps)
    shutil.copy(dumps / TOPIC_LIST.name, dumps / "copy.txt")  # the same bytes twice
    out = ingest(dumps)
    assert out.code == 0
    held = packed(out.folder)
    assert list(held) == ["pages-1.pack"]
    assert sorted(held["pages-1.pack"]) == sorted([*(p.name for p in SEEDS.iterdir()), "copy.txt"])
    size = sum(p.stat().st_size for p in SEEDS.iterdir())  # the copy's bytes held once
    assert (out.folder / "state" / "pages-1.pack").stat().st_size == size


def test_a_rerun_packs_only_the_page_that_changed(tmp_path: Path) -> None:
    from ingest.cli import main

    dumps, out = tmp_path / "dumps", tmp_path / "out"
    shutil.copytree(SEEDS, dumps)
    assert main(["run", str(dumps), "--out", str(out), "--quiet"]) == 0
    with open(dumps / TOPIC_LIST.name, "ab") as fh:
        fh.write(b"\n")
    assert main(["run", str(dumps), "--out", str(out), "--quiet"]) == 0
    held = packed(out)
    assert held["pages-2.pack"] == [TOPIC_LIST.name]
    assert (out / "state" / "pages-2.pack").read_bytes() == (dumps / TOPIC_LIST.name).read_bytes()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["dumps", "out"]  # nothing beside
