"""The widgets that run in the built book's pages compute the package's numbers.

One headless Chromium session opens a page holding the four live widgets
(book/_live/vg-live.js) and drives their controls over a grid of inputs (live_driver.js);
each point's values are compared with the package: group_advantages, the clipped surrogate
(and its autograd gradient), the exact KL and the sampled estimators, and the probability
that a group has signal. Doubles are compared within 1e-9 relative (1e-12 absolute near 0):
JavaScript sums in another order than torch, so only the last bits may differ. Printed
values carry six significant digits and are checked to that precision.
"""

from __future__ import annotations

import json
import math
import re

import pytest
import torch
import yaml
from bs4 import BeautifulSoup

import book_browser
from verifiable_grpo.book import live_widgets, widgets
from verifiable_grpo.core.config import repo_root
from verifiable_grpo.part2.analysis import iid_zero_variance_fraction
from verifiable_grpo.part3.expert_iteration_lab.group_relative import mixed_group_probability
from verifiable_grpo.training.losses import ClipRange, TokenLogProbs, clipped_surrogate_tokens

DRIVER = repo_root() / "tests" / "book" / "live_driver.js"
REL, ABS = 1e-9, 1e-12
PAGE = """<!DOCTYPE html><html><head><meta charset="utf-8"></head><body>
<div class="vg-live" data-widget="advantages"></div>
<div class="vg-live" data-widget="clip" data-advantage="1" data-epsilon="0.2"></div>
<div class="vg-live" data-widget="kl"></div>
<div class="vg-live" data-widget="signal"></div>
<script type="application/json" id="vg-grid">{grid}</script>
<script src="{module}"></script><script src="{driver}"></script></body></html>"""

REWARDS = ["1, 0, 1, 0", "1 1 0 0 0 0 0 0", "1,1,1,1", "0, 0", "0.5, 0.25, 1, 0", "0.1 0.1 0.1",
           "3, -2, 7.5, 0.001, 1e3", "1", "1, 0", "-1" + ", 1" * 15, "a, 1", "", "1, inf"]  # fmt: skip
KL_PAIRS = [("0.5, 0.3, 0.2", "0.2, 0.3, 0.5"), ("1, 1", "1, 1"), ("0.9, 0.1", "0.1, 0.9"),
            ("0.5, 0, 0.5", "0.2, 0.3, 0.5"), ("1, 2, 3, 4", "4, 3, 2, 1"),
            ("0.3 0.2 0.1 0.05 0.05 0.1 0.05 0.05 0.05 0.05", "1 1 1 1 1 1 1 1 1 1"),
            ("0.5000001, 0.4999999", "0.5, 0.5"), ("0.5, 0.5", "1, 0"),
            ("0.5, 0.3", "0.2, 0.3, 0.5"), ("-1, 2", "1, 1")]  # fmt: skip
RATIOS = ["0.5", "0.63", "0.8", "1", "1.2", "1.28", "1.5"]


def grid() -> dict:
    advantages = [
        {"rewards": r, "correction": c, "epsilon": e}
        for r in REWARDS
        for c in ("0", "1")
        for e in ("1e-8", "1e-4", "0.1")
    ]
    clip = [
        {"advantage": a, "epsilon": lo, "epsilon_high": hi, "ratio": RATIOS[n % len(RATIOS)]}
        for n, (a, lo, hi) in enumerate(
            (a, lo, hi)
            for a in ("-2", "-1", "-0.3", "0", "0.5", "1", "2")
            for lo in ("0.05", "0.2", "0.5")
            for hi in ("0.2", "0.28")
        )
    ]
    clip += [
        {"advantage": a, "epsilon": "0.2", "epsilon_high": "0.2", "ratio": r}
        for a in ("1", "-1")
        for r in RATIOS
    ]
    kl = [{"p": p, "q": q, "token": t} for p, q in KL_PAIRS for t in ("0", "1")]
    signal = [
        {"p": p, "G": g}
        for p in ("0", "0.01", "0.05", "0.2", "0.37", "0.5", "0.9", "1")
        for g in ("1", "2", "4", "8", "16", "32")
    ]
    return {"advantages": advantages, "clip": clip, "kl": kl, "signal": signal}


@pytest.fixture(scope="module")
def driven(tmp_path_factory):
    if book_browser.chromium() is None:
        pytest.skip("chromium not installed (apt-get install chromium)")
    page = tmp_path_factory.mktemp("live") / "live.html"
    page.write_text(
        PAGE.format(
            grid=json.dumps(grid()),
            module=live_widgets.live_script_path().as_uri(),
            driver=DRIVER.as_uri(),
        )
    )
    dom = book_browser.dump_dom(page.as_uri(), budget_ms=5000)
    match = re.search(r'<pre id="vg-live-report">(.*?)</pre>', dom, re.S)
    assert match, "the driver wrote no report: the module or the driver failed to load"
    report = json.loads(BeautifulSoup(match.group(1), "html.parser").get_text())
    assert "driver_error" not in report, report.get("driver_error")
    return report


def close(js, py, rel=REL, scale=1.0) -> bool:
    return abs(js - py) <= rel * abs(py) + ABS * scale


def printed_close(text: str, py: float) -> bool:
    """A value printed with six significant digits is within rounding of Python's."""
    return abs(float(text) - py) <= 5e-6 * abs(py) + 1e-12


def figure_moves_with_values(points, key):
    """Moving a control that changes the values changes the figure too."""
    for before, after in zip(points, points[1:]):
        if "error" in before["state"] or "error" in after["state"]:
            continue
        if key(before["state"]) != key(after["state"]):
            assert before["figure"] != after["figure"], (before["state"], after["state"])


def test_the_advantages_are_group_advantages(driven):
    points = driven["advantages"]["points"]
    for point, snap in zip(grid()["advantages"], points):
        state = snap["state"]
        try:
            view = widgets.advantage_view(
                widgets.parse_numbers(point["rewards"], "rewards"),
                int(point["correction"]),
                float(point["epsilon"]),
            )
        except ValueError:
            assert "error" in state and snap["error"] and snap["figure"] is None, point
            continue
        assert "error" not in state, (point, state)
        scale = max(abs(r) for r in view["rewards"]) or 1.0
        assert state["rewards"] == view["rewards"]
        assert close(state["mean"], view["mean"], scale=scale), point
        assert close(state["std"], view["std"], scale=scale), point
        assert all(map(close, state["advantages"], view["advantages"])), point
        assert state["zero_variance"] == view["zero_variance"]
        if view["zero_variance"]:
            assert state["advantages"] == [0.0] * len(view["rewards"])
        printed = snap["printed"]["advantages"].split(", ")
        assert all(map(printed_close, printed, view["advantages"])), point
        assert printed_close(snap["printed"]["std"], view["std"])
        # The figure's bars are the advantages, drawn above the axis when positive.
        bars = [m for m in snap["marks"] if m["cls"] == "vg-advantage"]
        assert [m["v"] for m in bars] == state["advantages"]
    figure_moves_with_values(points, lambda s: s["advantages"])


def _loss_at(advantage: float, ratio: float, low: float, high: float):
    """The training loss's own objective and d objective / d rho at one token's ratio."""
    current = torch.tensor([[math.log(ratio)]], dtype=torch.float64, requires_grad=True)
    per_token, _ = clipped_surrogate_tokens(
        TokenLogProbs(
            current, torch.zeros(1, 1, dtype=torch.float64), torch.ones(1, 1, dtype=torch.bool)
        ),
        torch.tensor([advantage], dtype=torch.float64),
        ClipRange(low, high),
    )
    (-per_token.sum()).backward()
    return -float(per_token.detach()), float(current.grad) / ratio  # d/d log rho = rho d/d rho


def test_the_clip_is_the_clipped_surrogate(driven):
    points = driven["clip"]["points"]
    for point, snap in zip(grid()["clip"], points):
        state = snap["state"]
        keys = ("advantage", "epsilon", "epsilon_high", "ratio")
        a, lo, hi, rho = (float(point[k]) for k in keys)
        assert [state[k] for k in ("A", "epsilon", "epsilon_high", "rho")] == [a, lo, hi, rho]
        curves = widgets.clipping_curves(a, lo, hi)
        assert state["clipped"] == curves["clipped_mask"].tolist(), point
        assert all(map(close, state["objective"], curves["objective"].tolist()))
        assert all(map(close, state["gradient"], curves["gradient"].tolist()))
        assert close(state["share_clipped"], float(curves["clipped_mask"].mean()))
        probe = widgets.clipping_curves(a, lo, hi, ratios=[rho])
        assert close(state["at"]["objective"], float(probe["objective"][0]))
        assert state["at"]["gradient"] == float(probe["gradient"][0]), point
        _, kept, text = live_widgets.clip_region(a, rho, lo, hi)
        assert (state["region"], state["kept"]) == (text, kept)
        assert snap["printed"]["region"] == text
        assert printed_close(snap["printed"]["objective"], float(probe["objective"][0]))
        if min(abs(rho - (1 - lo)), abs(rho - (1 + hi))) > 1e-9:  # exp(log rho) may cross an edge
            objective, slope = _loss_at(a, rho, lo, hi)
            assert close(state["at"]["objective"], objective) and close(
                state["at"]["gradient"], slope, rel=1e-12, scale=abs(a)
            ), point
        # The shaded bands are exactly the runs of clipped ratios.
        ratios, mask = curves["ratios"], curves["clipped_mask"]
        edges = [(ratios[i], ratios[j]) for i, j in _runs(mask)]
        shaded = [(m["x0"], m["x1"]) for m in snap["marks"] if m["cls"] == "vg-clipped"]
        assert shaded == edges * 2, point  # once in each panel
    figure_moves_with_values(points, lambda s: (s["objective"], s["rho"]))


def _runs(mask):
    runs, start = [], None
    for i, on in enumerate(list(mask) + [False]):
        if on and start is None:
            start = i
        elif not on and start is not None:
            runs.append((start, i - 1))
            start = None
    return runs


def test_the_kl_widget_shows_the_exact_kl_and_the_estimators(driven):
    points = driven["kl"]["points"]
    for point, snap in zip(grid()["kl"], points):
        state = snap["state"]
        try:
            p = widgets.parse_numbers(point["p"], "p")
            q = widgets.parse_numbers(point["q"], "q")
            view = live_widgets.kl_estimator_values(p, q)
        except ValueError:
            assert "error" in state and snap["error"], point
            continue
        assert "error" not in state, (point, state)
        assert close(state["exact"], view["exact"]), point
        for name in live_widgets.ESTIMATORS:
            assert close(state[f"{name}_mean"], view[f"{name}_mean"]), (point, name)
            assert close(state[f"{name}_std"], view[f"{name}_std"]), (point, name)
            for js, py in zip(state["per_token"][name], view["per_token"][name]):
                assert (js is None) == (py is None) and (py is None or close(js, py)), point
        mean, spread = snap["printed"]["k3"].split(" \u00b1 ")
        assert printed_close(mean, view["k3_mean"]) and printed_close(spread, view["k3_std"])
        assert printed_close(snap["printed"]["exact"], view["exact"])
        exact_line = [m for m in snap["marks"] if m["cls"] == "vg-exact"]
        assert [m["v"] for m in exact_line] == [state["exact"]]
    figure_moves_with_values(points, lambda s: (s["p"], s["q"], s["token"]))


def test_the_signal_widget_is_the_group_probability(driven):
    points = driven["signal"]["points"]
    for point, snap in zip(grid()["signal"], points):
        state = snap["state"]
        p, g = float(point["p"]), int(point["G"])
        assert (state["p"], state["G"]) == (p, g)
        assert close(state["mixed"], mixed_group_probability(p, g)), point
        assert close(state["constant"], iid_zero_variance_fraction(p, g)), point
        assert close(state["all_wrong"], (1 - p) ** g) and close(state["all_right"], p**g)
        assert printed_close(snap["printed"]["mixed"], mixed_group_probability(p, g))
        probe = [m for m in snap["marks"] if m["cls"] == "vg-probe"]
        assert [(m["x"], m["y"]) for m in probe] == [(p, state["mixed"])]
    figure_moves_with_values(points, lambda s: (s["p"], s["G"]))


def test_every_widget_renders_its_default_on_load(driven):
    for kind, result in driven.items():
        initial = result["initial"]
        assert "error" not in initial["state"] and initial["figure"], kind
        assert initial["printed"], kind


def test_chapters_load_the_module_the_book_ships():
    """Every chapter that places a live widget loads vg-live.js from the built book's
    _static/ (a relative path: no network), and _config.yml ships book/_live there."""
    config = yaml.safe_load((repo_root() / "_config.yml").read_text())
    assert "book/_live" in config["sphinx"]["config"]["html_static_path"]
    placed = 0
    for script in sorted((repo_root() / "notebooks").rglob("*.py")):
        source = script.read_text()
        kinds = re.findall(r'class="vg-live" data-widget="(\w+)"', source)
        if not kinds:
            continue
        placed += len(kinds)
        assert set(kinds) <= {"advantages", "clip", "kl", "signal"}, script.name
        depth = len(script.relative_to(repo_root()).parts) - 1
        loader = f'<script src="{"../" * depth}_static/vg-live.js"></script>'
        assert source.count(loader) == 1, f"{script.name} does not load {loader} once"
    assert placed >= 4
