"""Figures drawn for the book's column: their smallest text is at least 11 px where the page
shows them at 1280 px, nothing is cut off at their edge, and no title runs into a panel or
another title (figure_checks, measured on the matplotlib Figure). Diagrams become captioned
figures that link to their full size, with a one-line alt text."""

from __future__ import annotations

import json
import re

import pytest
from matplotlib.figure import Figure

from verifiable_grpo.book import (
    band_plots,
    case_study_widgets,
    diagram_figures,
    diagrams,
    figure_checks,
    lab_widgets,
    learning_plots,
    plots,
    task_plots,
)
from verifiable_grpo.book.notebook import load_recorded
from verifiable_grpo.book.widgets import FIGURE_DPI, figure_png
from verifiable_grpo.core.config import load_config, repo_root
from verifiable_grpo.part1 import band_study, fixed_prompts, lift_study, sweep
from verifiable_grpo.part3 import labs
from verifiable_grpo.task import data


def _result_figures():
    seed = load_config("tiny")["data"]["seed"]
    yield (
        "I.1 problem sizes",
        lambda: task_plots.plot_problem_sizes(data.generate_problem_set(seed)),
    )
    runs = fixed_prompts.recorded()
    yield (
        "I.6 fixed prompts",
        lambda: learning_plots.plot_fixed_prompt_run(runs["ours"], runs["trl"]),
    )
    yield (
        "I.6 telemetry",
        lambda: plots.plot_grpo_telemetry(load_recorded("learning/grpo-continuous.json")),
    )
    branches = {
        f"G = {size}": load_recorded(f"learning/grpo-g{size}-continuous.json")["history"]
        for size in (2, 8)
    }
    yield "I.9 group sizes", lambda: learning_plots.plot_group_size_branches(branches)
    yield (
        "I.10 lift curves",
        lambda: learning_plots.plot_lift_curves(lift_study.recorded()["results"]),
    )
    yield "I.10 sweep", lambda: plots.plot_sweep_histories(sweep.load_recorded()["results"])
    yield (
        "I.10 lift intervals",
        lambda: learning_plots.plot_lift_intervals(lift_study.recorded()["summary"]),
    )
    yield "I.12 signal", lambda: band_plots.plot_signal(0.1, 8, band_plots.band_marks())
    yield "I.12 band curves", lambda: band_plots.plot_band_curves(band_study.recorded("band"))
    fitted = {r["beta"]: r["fitted"] for r in labs.recorded("dpo")["metrics"]["bandit"]["rows"]}
    yield "III.4 betas", lambda: lab_widgets.plot_dpo_betas(fitted)
    selection = labs.recorded("reward-model")["metrics"]["selection"]
    yield (
        "III.3 best of n",
        lambda: lab_widgets.plot_best_of_n(lab_widgets.best_of_n_view(selection, 64)),
    )
    yield "III.10 bill", lambda: case_study_widgets.plot_bill(case_study_widgets.bill_view())


@pytest.mark.parametrize(
    "name,build", list(_result_figures()), ids=lambda v: v if isinstance(v, str) else ""
)
def test_result_figures_read_cleanly_in_the_column(name, build):
    assert figure_checks.layout_problems(build(), FIGURE_DPI) == [], name


@pytest.mark.parametrize("name", sorted(diagrams.DIAGRAMS))
def test_diagrams_read_cleanly_in_the_column(name):
    assert figure_checks.layout_problems(diagrams.DIAGRAMS[name](), diagrams.DPI) == [], name


def test_the_checks_catch_small_text_and_colliding_titles():
    figure = Figure(figsize=(11, 3), layout="none")
    axes = figure.subplots(1, 3)
    for ax in axes:
        ax.set_title("a title far too long for a third of the width of this figure")
    problems = figure_checks.layout_problems(figure, FIGURE_DPI)
    assert any("px at the column's width" in p for p in problems)
    assert any("overlap" in p for p in problems)
    tall = Figure(figsize=(4, 3))
    tall.subplots().set_title("a title\non\nmany\nlines\nruns off the top\n" * 3)
    assert any("cut off" in p for p in figure_checks.layout_problems(tall, FIGURE_DPI))


def test_saved_pictures_carry_their_smallest_text(tmp_path):
    from PIL import Image

    figure = Figure(figsize=(4, 3))
    figure.subplots().set_title("t", fontsize=13)
    (tmp_path / "f.png").write_bytes(figure_png(figure))
    with Image.open(tmp_path / "f.png") as image:
        assert float(
            image.text[figure_checks.SMALLEST_TEXT_KEY]
        ) == figure_checks.smallest_text_points(figure)
    saved = diagrams.save_diagrams(tmp_path, ["grpo_loop"])[0]
    with Image.open(saved) as image:
        assert float(image.text[figure_checks.SMALLEST_TEXT_KEY]) >= 8


def test_a_diagram_becomes_a_captioned_figure_linking_its_full_size():
    markdown = "![one alt\nover two lines](../../book/images/grpo_loop.png)\n\n*The loop.*\n"
    out = diagram_figures.as_figures(markdown, "notebooks/part1/06_grpo")
    assert out.startswith("```{figure} ../../book/images/grpo_loop.png\n")
    assert ":alt: one alt over two lines\n" in out
    assert ":target: ../../_images/grpo_loop.png\n" in out
    assert "The loop. " + diagram_figures.ENLARGE in out
    page = diagram_figures.as_figures(markdown.replace("../../book/", ""), "book/part1")
    assert ":target: ../_images/grpo_loop.png" in page


def test_every_diagram_in_the_book_has_a_caption():
    sources = [*repo_root().joinpath("notebooks").rglob("*.ipynb")]
    shown = {}
    for path in sources:
        for cell in json.loads(path.read_text())["cells"]:
            if cell["cell_type"] == "markdown":
                text = "".join(cell["source"])
                for name in re.findall(r"images/(\w+)\.png\)", text):
                    converted = diagram_figures.as_figures(text, "notebooks/x/y")
                    assert f"{{figure}} ../../book/images/{name}.png" in converted, (path, name)
                    shown[name] = path
    for page in repo_root().joinpath("book").glob("*.md"):
        text = page.read_text()
        for name in re.findall(r"images/(\w+)\.png\)", text):
            assert f"images/{name}.png\n" in diagram_figures.as_figures(text, "book/x"), page
            shown[name] = page
    assert set(diagrams.DIAGRAMS) <= set(shown)


def test_the_grpo_loop_opens_chapter_6_and_part_1():
    source = repo_root().joinpath("notebooks/part1/06_grpo.py").read_text()
    first_code = source.index('# %% tags=["colab"')
    assert source.index("images/grpo_loop.png") < first_code
    assert "images/grpo_loop.png" in repo_root().joinpath("book/part1.md").read_text()


def test_no_ipywidget_output_reaches_the_static_book():
    for path in repo_root().joinpath("notebooks").rglob("*.ipynb"):
        for cell in json.loads(path.read_text())["cells"]:
            outputs = json.dumps(cell.get("outputs", []))
            if "application/vnd.jupyter.widget-view+json" in outputs:
                tags = cell.get("metadata", {}).get("tags", [])
                assert {"remove-output", "remove-cell"} & set(tags), (
                    f"{path.name}: an ipywidget output would sit inert in the static book; "
                    "tag its cell remove-output and show a live or static figure instead"
                )
