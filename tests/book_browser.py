"""What a reader sees on a built page, measured in headless Chromium (no DevTools protocol).

One Chromium run per page: a copy of the page gets tests/book_probe.js, which waits for
MathJax and the widgets, measures layout at the given window width and appends a JSON report
to the DOM; --dump-dom returns that DOM. Python then reads the report and the text nodes.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

from bs4 import BeautifulSoup
from bs4.element import NavigableString

PROBE = Path(__file__).with_name("book_probe.js")
# Headless Chromium will not open a window narrower than this; narrower pages are measured
# inside an iframe of the wanted width (the page's own viewport, so its media queries apply).
NARROWEST_WINDOW = 500
HOST = """<!DOCTYPE html><html><body style="margin:0">
<iframe src="{page}" style="border:0;width:{width}px;height:2000px"></iframe>
<script>window.addEventListener("message", function (event) {{
  var pre = document.createElement("pre"); pre.id = "vg-probe"; pre.textContent = event.data;
  document.body.appendChild(pre); }});</script></body></html>"""
# Text a reader should never see outside code: TeX commands, $...$ pairs, \( \[ delimiters.
TEX_SOURCE = re.compile(r"\\[A-Za-z]{2,}|\$[^$\n]{1,200}\$|\\[(\[]")
# Where TeX-looking text is legitimate or already typeset.
NOT_PROSE = ("pre", "code", "script", "style", "textarea", "mjx-container", "mjx-assistive-mml")


def chromium() -> str | None:
    return shutil.which("chromium") or shutil.which("chromium-browser")


def browse(page: Path, width: int = 1280, budget_ms: int = 15000) -> tuple[str, dict]:
    """(DOM after scripts ran, the probe's report) for one built page at `width` px. Below
    NARROWEST_WINDOW the DOM is the host page's (the report is the framed page's)."""
    probed = page.with_name(page.stem + ".probe.html")
    source = page.read_text()
    probed.write_text(source.replace("</body>", f'<script src="{PROBE.as_uri()}"></script></body>'))
    opened = probed
    if width < NARROWEST_WINDOW:
        opened = page.with_name(page.stem + ".host.html")
        opened.write_text(HOST.format(page=probed.name, width=width))
    try:
        dom = dump_dom(opened.as_uri(), width=max(width, NARROWEST_WINDOW), budget_ms=budget_ms)
    finally:
        probed.unlink()
        opened.unlink(missing_ok=True)
    match = re.search(r'<pre id="vg-probe">(.*?)</pre>', dom, re.S)
    report = json.loads(BeautifulSoup(match.group(1), "html.parser").get_text()) if match else {}
    return dom, report


def dump_dom(url: str, width: int = 1280, budget_ms: int = 15000) -> str:
    """The DOM of `url` after its scripts ran, from one offline headless Chromium run."""
    with tempfile.TemporaryDirectory(prefix="chromium-") as profile:
        flags = [
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--allow-file-access-from-files",
            f"--user-data-dir={profile}",
            f"--virtual-time-budget={budget_ms}",
            f"--window-size={width},2000",
            "--dump-dom",
            url,
        ]
        return subprocess.run(
            [chromium(), *flags], capture_output=True, text=True, timeout=180
        ).stdout


def article(dom: str):
    soup = BeautifulSoup(dom, "html.parser")
    return soup.select_one("article.bd-article")


def visible_tex(node) -> list[str]:
    """Text nodes outside code and typeset math that still look like TeX source."""
    found = []
    for text in node.find_all(string=True):
        if not isinstance(text, NavigableString) or text.find_parent(NOT_PROSE):
            continue
        if text.find_parent(class_="cell_output") and text.find_parent("table"):
            continue  # a data table printed by code (repr strings hold \n); prose is checked
        if TEX_SOURCE.search(text):
            found.append(" ".join(text.split())[:80])
    return found


def page_problems(dom: str, report: dict, equations_must_fit: bool = True) -> list[str]:
    """Every defect one page shows; empty when it reads cleanly. A display equation wider
    than the column always needs a scroll box; with equations_must_fit it must also fit."""
    body = article(dom)
    if body is None:
        return ["no article rendered"]
    problems = [f"TeX source shown as text: {t!r}" for t in visible_tex(body)]
    if "NBVAL" in body.get_text():
        problems.append("an NBVAL marker is visible to the reader")
    if "Traceback" in body.get_text() or body.select(".output_error, .error"):
        problems.append("an error output is shown")
    return problems + layout_problems(report, equations_must_fit)


def layout_problems(report: dict, equations_must_fit: bool = True) -> list[str]:
    """The defects the probe measured (the part of page_problems that depends on width)."""
    if not report.get("article"):
        return ["no article rendered (or the probe did not run)"]
    problems = [f"image does not load or is empty: {s}" for s in report["broken_images"]]
    problems += [
        f"clipped at {report['width']} px without a scroll box: {s}" for s in report["clipped"]
    ]
    if equations_must_fit:
        problems += [
            f"display equation wider than the column at {report['width']} px: {s}"
            for s in report["wide_math"]
        ]
    problems += [f"table cells run together: {s!r}" for s in report["cramped"]]
    problems += [
        f"verdict column off-screen at {report['width']} px: {s}"
        for s in report.get("hidden_verdicts", [])
    ]
    problems += [
        f"code cell wider than the column at {report['width']} px: {s}"
        for s in report.get("code_overflow", [])
    ]
    if report["math_errors"]:
        problems.append(f"{report['math_errors']} MathJax errors")
    for live in report.get("live", []):
        if not live["rendered"]:
            problems.append(f"live widget {live['kind']!r} did not render (vg-live.js)")
    for number, widget in enumerate(report["widgets"], 1):
        if not widget["rendered"]:
            problems.append(f"widget {number} did not render")
        elif widget["figures"] < 1:
            problems.append(f"widget {number} shows no rendered figure")
    return problems


def sidebar_docnames(page: Path, html_root: Path) -> list[str]:
    """The documents the left-hand table of contents links to, in order."""
    soup = BeautifulSoup(page.read_text(), "html.parser")
    names = []
    for link in soup.select(".bd-sidebar-primary a.reference.internal"):
        href = link["href"].split("#")[0]
        target = page.resolve() if not href else (page.parent / href).resolve()
        names.append(target.relative_to(html_root.resolve()).with_suffix("").as_posix())
    return names
