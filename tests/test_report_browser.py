"""report.html in a real browser: headless Chromium opens the page of the seeds plus hostile
files, and a page beside it, at a phone's width (390 px) and a desktop's (1280 px); the
report of a second publish shows its changes at the top; Chinese text is drawn, not shown
as empty boxes (and the check says so when no font has the glyphs).

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
from playwright.sync_api import BrowserContext, Page, Playwright, Route, sync_playwright

from conftest import Out
from test_report_page import SECTIONS, WHOLE_FILE, hostile_inputs, run_into, second

__all__ = ["second"]  # a fixture of test_report_page's, used here too

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
def playwright() -> Iterator[Playwright]:
    chromium()  # skip or fail before starting anything
    with sync_playwright() as p:
        yield p


def launch(p: Playwright, profile: Path, env: dict[str, str] | None = None) -> BrowserContext:
    """Chromium with a fresh profile (and ``env``: the tests' environment by default)."""
    return p.chromium.launch_persistent_context(
        str(profile), executable_path=chromium(), headless=True, args=FLAGS, env=env
    )


@pytest.fixture(scope="module")
def browser(
    playwright: Playwright, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[BrowserContext]:
    context = launch(playwright, tmp_path_factory.mktemp("profile"))
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
        excerpts = page.locator("#problems pre.excerpt").all_text_contents()
        assert WHOLE_FILE.replace("\n", "\\n") in excerpts
        # Readable at this width: nothing wider than the screen; Chinese drawn.
        assert page.evaluate("document.scrollingElement.scrollWidth") <= width
        assert cjk_drawn(page), "Chinese shows as empty boxes: install fonts-noto-cjk"
    finally:
        page.close()


@pytest.mark.parametrize("width", [390, 1280])
def test_a_page_beside_it_in_chromium(browser: BrowserContext, page_file: Path, width: int) -> None:
    url = (page_file.parent / "report" / "topics-1.html").as_uri()
    page, seen = open_page(browser, url, width)
    try:
        assert seen.errors == [] and seen.requests == [url]
        assert page.locator("#topic-alpha .name").text_content() == "阿尔法{{7*7}}"
        assert page.evaluate("document.scrollingElement.scrollWidth") <= width
        assert page.locator("nav a").first.get_attribute("href") == "../report.html#topics"
    finally:
        page.close()


@pytest.mark.parametrize("width", [390, 1280])
def test_the_changes_are_at_the_top(browser: BrowserContext, second: Out, width: int) -> None:
    """A second publish: its changed fields are on the first screen, not below the rest."""
    page, _ = open_page(browser, (second.folder / "report.html").as_uri(), width)
    try:
        top = page.evaluate(
            "document.querySelector('#change-list .field').getBoundingClientRect().top"
        )
        assert top < 900 if width > 700 else top < 1400
    finally:
        page.close()


#: Chinese characters of the pages, each a different glyph in any font that has them; and
#: a character no font has (a private use code point of plane 15), drawn as the empty box.
HAN = ["模", "型", "服", "务", "算", "力"]
MISSING = "\U000f0000"
DRAW = """
([chars, selector]) => {
  const style = getComputedStyle(document.querySelector(selector));
  const canvas = document.createElement("canvas");
  canvas.width = 48;
  canvas.height = 48;
  const ctx = canvas.getContext("2d");
  ctx.font = `${style.fontWeight} 32px ${style.fontFamily}`;
  return chars.map((ch) => {
    ctx.clearRect(0, 0, 48, 48);
    ctx.fillText(ch, 4, 36);
    return Array.from(ctx.getImageData(0, 0, 48, 48).data).join(",");
  });
}
"""


def cjk_drawn(page: Page, selector: str = "[lang=zh]") -> bool:
    """Are Chinese characters drawn in the font of ``selector``'s text as glyphs, not as
    the empty box a missing glyph gets? Each is drawn alone: glyphs of different characters
    differ from each other and from the box, while boxes are all the same picture."""
    drawn: list[str] = page.evaluate(DRAW, [[*HAN, MISSING], selector])
    han, box = drawn[:-1], drawn[-1]
    return len(set(han)) == len(han) and box not in han


def test_the_glyph_check_sees_empty_boxes(
    playwright: Playwright, page_file: Path, tmp_path: Path
) -> None:
    """Chromium with no font at all (fontconfig pointed at an empty folder): the Chinese of
    the same page is boxes, and the check says so."""
    (tmp_path / "fonts").mkdir()
    conf = tmp_path / "fonts.conf"
    conf.write_text(
        f'<?xml version="1.0"?>\n<fontconfig><dir>{tmp_path / "fonts"}</dir>'
        f"<cachedir>{tmp_path / 'cache'}</cachedir></fontconfig>\n",
        encoding="utf-8",
    )
    env = {**os.environ, "FONTCONFIG_FILE": str(conf)}
    context = launch(playwright, tmp_path / "profile", env)
    try:
        page, _ = open_page(context, page_file.as_uri(), 1280)
        assert not cjk_drawn(page)
    finally:
        context.close()
