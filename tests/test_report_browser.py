"""report.html in a real browser: headless Chromium opens the page of the seeds plus hostile
files, at a phone's width (390 px) and a desktop's (1280 px).

Driven by Playwright's Python package with Debian's ``/usr/bin/chromium`` (it never fetches
a browser of its own): it reports every console message, page error, dialog and request, and
sets the viewport, which the DevTools protocol by hand would take a websocket client and a
few hundred lines to do. A fresh profile per run (``--user-data-dir`` in the test's tmp
folder); the flags keep Chromium from reaching out on its own. Outside CI, no Chromium →
skip with a reason; in CI (``CI=true``) a missing Chromium fails.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from playwright.sync_api import BrowserContext, Page, Route, sync_playwright

from conftest import Out
from test_report_page import SECTIONS, WHOLE_FILE, hostile_inputs, run_into

FLAGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


def chromium() -> str:
    path = shutil.which("chromium")
    if path is not None:
        return path
    if os.environ.get("CI") == "true":
        pytest.fail("CI: no chromium on PATH (.ci/run installs Debian's package 'chromium')")
    pytest.skip("no chromium on PATH: `apt-get install chromium` (Debian) runs the browser tests")


@pytest.fixture(scope="module")
def page_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tmp = tmp_path_factory.mktemp("browser")
    out: Out = run_into(hostile_inputs(tmp / "in"), tmp / "out")
    return out.folder / "report.html"


@pytest.fixture(scope="module")
def browser(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrowserContext]:
    executable = chromium()
    with sync_playwright() as p:
        context = p.chromium.launch_persistent_context(
            str(tmp_path_factory.mktemp("profile")),
            executable_path=executable,
            headless=True,
            args=FLAGS,
        )
        yield context
        context.close()


@dataclass
class Seen:
    """What the page did while it loaded."""

    console: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    dialogs: list[str] = field(default_factory=list)
    requests: list[str] = field(default_factory=list)


def open_page(context: BrowserContext, url: str, width: int) -> tuple[Page, Seen]:
    """Open ``url`` at ``width``; anything but the file itself is recorded and refused."""
    seen = Seen()
    page = context.new_page()
    page.set_viewport_size({"width": width, "height": 900})
    page.on("console", lambda m: seen.console.append(f"{m.type}: {m.text}"))
    page.on("pageerror", lambda e: seen.errors.append(str(e)))
    page.on("dialog", lambda d: (seen.dialogs.append(d.message), d.dismiss()))
    page.on("request", lambda r: seen.requests.append(r.url))

    def refuse_others(route: Route) -> None:
        if route.request.url == url:
            route.continue_()
        else:
            route.abort()

    page.route("**/*", refuse_others)
    page.goto(url, wait_until="load")
    return page, seen


@pytest.mark.parametrize("width", [390, 1280])
def test_the_page_in_chromium(
    browser: BrowserContext, page_file: Path, tmp_path: Path, width: int
) -> None:
    url = page_file.as_uri()
    page, seen = open_page(browser, url, width)
    try:
        shot = tmp_path / f"report-{width}.png"
        page.screenshot(path=str(shot), full_page=True)
        assert shot.stat().st_size > 10_000
        assert [m for m in seen.console if m.startswith(("error", "warning"))] == []
        assert seen.errors == [] and seen.dialogs == []
        assert seen.requests == [url]  # nothing left the page
        for section in SECTIONS:
            assert page.locator(f"section#{section} > h2").is_visible(), section
        # The style applied (its hash matched the policy) and no script is in the page.
        border = page.evaluate("getComputedStyle(document.querySelector('h2')).borderBottomStyle")
        assert border == "solid"
        assert page.evaluate("document.scripts.length + document.images.length") == 0
        # Hostile text is shown as text.
        excerpts = page.locator("#rejects pre.excerpt").all_text_contents()
        assert WHOLE_FILE.replace("\n", "\\n") in excerpts
        assert page.locator("#topic-alpha .name").text_content() == "阿尔法{{7*7}}"
        # Readable at this width: nothing wider than the screen.
        assert page.evaluate("document.scrollingElement.scrollWidth") <= width
    finally:
        page.close()
