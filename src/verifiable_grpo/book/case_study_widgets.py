"""The case-study bill as a widget: move an assumption, see the bill and serving memory.

Same layers as lab_widgets: a pure view (a dict), a figure, and a builder that draws the
default figure at once, so the saved widget state shows it in the static book.
"""

from __future__ import annotations

from matplotlib.figure import Figure

from verifiable_grpo.book.lab_widgets import _draw, _image
from verifiable_grpo.book.widgets import _error, _table
from verifiable_grpo.part3 import case_study as cs

# (control, owner, field, slider bounds and step) for the widget
CONTROLS = (
    ("USD per GPU-hour", "prices", "usd_per_gpu_hour", (0.5, 8.0, 0.25)),
    ("training utilisation", "prices", "training_utilisation", (0.1, 0.8, 0.05)),
    ("generation utilisation", "prices", "generation_utilisation", (0.05, 0.8, 0.05)),
    ("group size G", "grpo", "group_size", (2, 32, 1)),
    ("output tokens", "workload", "output_tokens", (250, 8000, 250)),
    ("trials", "trials", None, (1, 10, 1)),
)


def bill_view(**settings) -> dict:
    """The bill and serving memory under the defaults with `settings` changed.

    Keys are the fields of CONTROLS (usd_per_gpu_hour, group_size, output_tokens, trials...)."""
    parts = {"prices": cs.Prices(), "grpo": cs.GrpoPlan(), "workload": cs.Workload()}
    known = {field: owner for _, owner, field, _ in CONTROLS if field}
    trials = settings.pop("trials", 3)
    for key, value in settings.items():
        if key not in known:
            raise ValueError(f"unknown setting {key!r}; choose one of {', '.join(known)} or trials")
        parts[known[key]] = cs.with_changes(parts[known[key]], **{key: value})
    result = cs.bill(
        grpo=parts["grpo"], workload=parts["workload"], prices=parts["prices"], trials=trials
    )
    return dict(result, serving=cs.serving_memory())


def bill_rows(view: dict) -> list[tuple[str, str]]:
    sft, grpo, serving = view["sft"], view["grpo"], view["serving"]
    return [
        ("SFT (one run)", f"{sft['gpu_hours']:.2f} GPU-h, USD {sft['usd']:.2f}"),
        ("GRPO (one trial)", f"{grpo['gpu_hours']:.2f} GPU-h, USD {grpo['usd']:.2f}"),
        (f"{view['trials']} trials of each", f"USD {view['total_usd']:.0f}"),
        ("GRPO responses", f"{grpo['responses']:,}"),
        ("serving memory", f"{serving['total_bytes'] / 1e9:.2f} GB"),
    ]


def plot_bill(view: dict) -> Figure:
    figure = Figure(figsize=(7, 3.2))
    ax = figure.subplots()
    price = view["grpo"]["usd"] / view["grpo"]["gpu_hours"]
    stages = [("SFT", view["sft"]["gpu_hours"])] + [
        (f"GRPO {name}", hours) for name, hours in view["grpo"]["stage_hours"].items()
    ]
    names, dollars = zip(*[(name, hours * price) for name, hours in stages])
    bars = ax.barh(names, dollars, color=["#4c72b0"] + ["#dd8452"] * 3)
    ax.bar_label(bars, labels=[f"USD {d:.2f}" for d in dollars], padding=3, fontsize=9)
    ax.invert_yaxis()
    ax.set(
        xlabel="USD per run",
        xlim=(0, max(dollars) * 1.3),
        title=f"One SFT run and one GRPO trial: USD {view['sft']['usd']:.2f} + "
        f"{view['grpo']['usd']:.2f}",
    )
    ax.title.set_fontsize(11)
    figure.tight_layout()
    return figure


def make_bill_widget():
    import ipywidgets as w

    sliders = {}
    for label, owner, field, (low, high, step) in CONTROLS:
        key = field or "trials"
        value = _default(owner, field)
        kind = w.IntSlider if isinstance(step, int) else w.FloatSlider
        sliders[key] = kind(
            value=value,
            min=low,
            max=high,
            step=step,
            description=label,
            style={"description_width": "initial"},
        )
    table, image = w.HTML(), _image()

    def render():
        try:
            view = bill_view(**{key: s.value for key, s in sliders.items()})
        except ValueError as error:
            table.value = _error(error)
            return
        table.value = _table(bill_rows(view))
        _draw(image, plot_bill(view))

    for s in sliders.values():
        s.observe(lambda change: render(), names="value")
    render()
    return w.VBox(list(sliders.values()) + [table, image])


def _default(owner: str, field: str | None):
    if field is None:
        return 3
    return getattr(
        {"prices": cs.Prices(), "grpo": cs.GrpoPlan(), "workload": cs.Workload()}[owner], field
    )
