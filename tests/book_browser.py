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
LIVE_STACK_BELOW = 600  # px: vg-live.js's STACK_BELOW, under which a widget's panels stack
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
    problems += diagram_problems(body)
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
        elif live.get("stacked") != (report["width"] < LIVE_STACK_BELOW):
            problems.append(
                f"live widget {live['kind']!r} at {report['width']} px: its two panels should "
                + ("stack" if report["width"] < LIVE_STACK_BELOW else "sit side by side")
            )
    if report["widgets"]:
        problems.append(
            f"{len(report['widgets'])} ipywidget outputs shown: no kernel runs behind them in "
            "the static book (tag the cell remove-output; a live or static figure teaches)"
        )
    if report.get("column_overflow"):
        problems.append(
            f"the text column scrolls sideways by {report['column_overflow']} px: "
            + "; ".join(report.get("overflowing", []))
        )
    problems += [f"empty section: {s!r}" for s in report.get("empty_sections", [])]
    return problems


def png_text_points(path: Path) -> tuple[float | None, float]:
    """(smallest text in points, dpi) that a PNG saved by the package carries; None where it
    carries no measure (an image not drawn by the package's figure code)."""
    from PIL import Image

    from verifiable_grpo.book.figure_checks import SMALLEST_TEXT_KEY

    with Image.open(path) as image:
        points = image.text.get(SMALLEST_TEXT_KEY) if hasattr(image, "text") else None
        dpi = image.info.get("dpi", (72, 72))[0]
    return (float(points) if points else None), float(dpi)


def small_text_problems(page: Path, report: dict) -> tuple[list[str], int]:
    """Pictures whose smallest text is under READABLE_PX as the page shows them, and how many
    pictures carried a measure."""
    from verifiable_grpo.book.figure_checks import READABLE_PX, displayed_px

    problems, measured = [], 0
    for image in report.get("images", []):
        path = (page.parent / image["src"]).resolve()
        if not path.is_file() or path.suffix != ".png":
            continue
        points, dpi = png_text_points(path)
        if points is None:
            continue
        measured += 1
        size = displayed_px(points, dpi, image["natural"], image["shown"])
        if size < READABLE_PX - 0.05:
            problems.append(f"text of {size:.1f} px in {path.name} (under {READABLE_PX:g} px)")
    return problems, measured


def sidebar_docnames(page: Path, html_root: Path) -> list[str]:
    """The documents the left-hand table of contents links to, in order."""
    soup = BeautifulSoup(page.read_text(), "html.parser")
    names = []
    for link in soup.select(".bd-sidebar-primary a.reference.internal"):
        href = link["href"].split("#")[0]
        target = page.resolve() if not href else (page.parent / href).resolve()
        names.append(target.relative_to(html_root.resolve()).with_suffix("").as_posix())
    return names


def phone_problems(report: dict, all_checks: bool) -> list[str]:
    """At 412 px: the pages that were made to fit a phone get every layout check; the others
    at least keep their text column and show no inert widget."""
    if all_checks:
        return layout_problems(report, equations_must_fit=False)
    if not report.get("article"):
        return ["no article rendered (or the probe did not run)"]
    problems = []
    if report.get("column_overflow"):
        problems.append(
            f"the text column scrolls sideways by {report['column_overflow']} px: "
            + "; ".join(report.get("overflowing", []))
        )
    return problems


def page_title(page: Path) -> str:
    """The text of a built page's first heading, without its permalink sign."""
    heading = BeautifulSoup(page.read_text(), "html.parser").select_one("article h1")
    return " ".join(heading.get_text(" ").replace("#", " ").split()) if heading else ""


def diagram_problems(body) -> list[str]:
    """Each diagram (book/images) sits in a figure with a caption, links to its full-size
    image, and has an alt text with no words run together at a former line break."""
    from verifiable_grpo.book.diagrams import DIAGRAMS

    problems = []
    for img in body.find_all("img"):
        name = Path(img.get("src", "")).stem
        if name not in DIAGRAMS:
            continue
        link, figure = img.find_parent("a"), img.find_parent("figure")
        if link is None or not link.get("href", "").endswith(f"{name}.png"):
            problems.append(f"diagram {name} does not link to its full size")
        if figure is None or figure.find("figcaption") is None:
            problems.append(f"diagram {name} has no visible caption")
        if re.search(r"[a-z]{2,}(ofthe|andthe|tothe|inthe)\b", img.get("alt", "")):
            problems.append(f"diagram {name}'s alt text runs words together")
    return problems
