"""``ingest validate`` reads one publish, even while runs swap the folder.

Files opened by path one after another could come from two publishes when a swap fell
between two opens ("totals.items is 44, files hold 47"), and a file of the publish swapped
out could be gone before it is read (which is no damage: the folder was replaced). Here a
process publishes two real publishes into the folder in turn, as a run does (a new set
beside the folder, swapped in), as fast as it can, while ``validate`` runs again and again:
every time it must find a valid publish.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import ROOT, SEEDS, TOPIC_PAGE
from ingest import SCHEMA_VERSION
from ingest.cli import main

SWAPPER = """
import sys
from pathlib import Path
from ingest.publish.door import read_marker
from ingest.publish.folder import Staging
a, b, out, stop, count = map(Path, sys.argv[1:])
sets = [
    (read_marker(d), {str(p.relative_to(d)): p.read_bytes() for p in d.rglob("*")
                      if p.is_file() and p.name != ".ingest"})
    for d in (a, b)
]
n = 0
print("ready", flush=True)
while not stop.exists():
    marker, files = sets[n % 2]
    staging = Staging(out)  # as a run publishes: every file and the marker, then one swap
    for name, data in files.items():
        staging.write(name, data)
    staging.publish(marker)
    n += 1
    count.with_suffix(".tmp").write_text(str(n))
    count.with_suffix(".tmp").replace(count)
print(n)
"""


def test_validate_reads_one_publish_while_the_folder_is_swapped(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    a, b, out, stop, count = (tmp_path / n for n in ("a", "b", "out", "stop", "count"))
    assert main(["run", str(SEEDS), "--out", str(a), "--quiet"]) == 0
    assert main(["run", str(TOPIC_PAGE), "--out", str(b), "--quiet"]) == 0
    shutil.copytree(a, out)
    swapper = subprocess.Popen(
        [sys.executable, "-c", SWAPPER, *map(str, (a, b, out, stop, count))],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert swapper.stdout is not None and swapper.stdout.readline() == "ready\n"
        capsys.readouterr()
        codes, said = [], []
        deadline = time.monotonic() + 60

        def swapped() -> int:
            return int(count.read_text()) if count.exists() else 0

        # as many validates as swaps, however the two processes share the machine
        while (len(codes) < 40 or swapped() < 40) and time.monotonic() < deadline:
            codes.append(main(["validate", str(out)]))
            said.append(capsys.readouterr())
    finally:
        stop.touch()
        swaps = int(swapper.communicate(timeout=60)[0])
    assert swaps >= 40, "the folder was not swapped while validate ran"
    bad = [s.out + s.err for code, s in zip(codes, said, strict=True) if code != 0]
    assert bad == [] and len(codes) >= 10, bad[:3]
    assert all(s.out == f"{out}: valid (schema {SCHEMA_VERSION})\n" for s in said)
