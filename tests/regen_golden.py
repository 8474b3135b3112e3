"""Regenerate the golden output of the seed pages after a deliberate change.

Run ``make golden`` (or ``.venv/bin/python tests/regen_golden.py``), then review
``git diff tests/golden`` before committing: every changed line is a changed record.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
GOLDEN = ROOT / "tests" / "golden"
#: Output files kept byte for byte; report.json is kept without its timing.
COPIED = ("items.jsonl", "topics.jsonl", "rejects.jsonl", "changes.jsonl", "report.html")
#: The folder of the pages beside report.html, kept byte for byte too.
PAGES = "report"


def pages_of(out: Path) -> dict[str, bytes]:
    """The pages beside report.html in ``out``, by name (``report/…``)."""
    return {f"{PAGES}/{p.name}": p.read_bytes() for p in sorted((out / PAGES).iterdir())}


def normalized_report(raw: bytes) -> bytes:
    """report.json without its ``timing`` member (the one part that varies run to run)."""
    doc = json.loads(raw)
    doc["timing"] = {}
    return json.dumps(doc, indent=2, ensure_ascii=False).encode() + b"\n"


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "out"
        cmd = [
            sys.executable,
            "-m",
            "ingest",
            "run",
            str(ROOT / "seeds"),
            "--out",
            str(out),
            "--quiet",
        ]
        subprocess.run(cmd, check=True)
        GOLDEN.mkdir(exist_ok=True)
        for name in COPIED:
            (GOLDEN / name).write_bytes((out / name).read_bytes())
        shutil.rmtree(GOLDEN / PAGES, ignore_errors=True)
        (GOLDEN / PAGES).mkdir()
        for name, data in pages_of(out).items():
            (GOLDEN / name).write_bytes(data)
        (GOLDEN / "report.json").write_bytes(normalized_report((out / "report.json").read_bytes()))
    print(f"golden output written to {GOLDEN}")


if __name__ == "__main__":
    main()
