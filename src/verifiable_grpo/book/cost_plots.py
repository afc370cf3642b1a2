"""Figures of what training costs: memory by component, GPU-hours by stage (matplotlib
Figures, no pyplot state). They draw the package's accounting, which the chapters print."""

from __future__ import annotations

from matplotlib.figure import Figure

COLUMN_INCHES = 7.5


def plot_memory_by_method(tables: dict[str, list[dict]], model: str) -> Figure:
    """tables: method -> accounting.memory_table's rows (component, GB, ..., then total).
    One stacked bar per method, a segment per component, so the reader sees which part
    each method shrinks."""
    figure = Figure(figsize=(COLUMN_INCHES, 3.8), layout="constrained")
    ax = figure.subplots()
    methods = list(tables)
    components = [row["component"] for row in tables[methods[0]] if row["component"] != "total"]
    left = [0.0] * len(methods)
    for component in components:
        sizes = [next(r["GB"] for r in tables[m] if r["component"] == component) for m in methods]
        ax.barh(methods, sizes, left=left, label=component)
        left = [a + b for a, b in zip(left, sizes)]
    ax.invert_yaxis()
    ax.set(
        title=f"Training memory of {model}, by method", xlabel="GB (10^9 bytes)", ylabel="method"
    )
    figure.legend(loc="outside lower center", ncols=3)
    return figure


def plot_bill(bill: dict, usd_per_gpu_hour: float) -> Figure:
    """bill: case_study.bill()'s record. One SFT run beside one GRPO trial in GPU-hours,
    the trial split into its stages; each bar ends with its price in dollars."""
    figure = Figure(figsize=(COLUMN_INCHES, 2.8), layout="constrained")
    ax = figure.subplots()
    ax.barh(["SFT, one run"], [bill["sft"]["gpu_hours"]], color="tab:grey", label="SFT")
    left = 0.0
    for stage, hours in bill["grpo"]["stage_hours"].items():
        ax.barh(["GRPO, one trial"], [hours], left=left, label=f"GRPO {stage}")
        left += hours
    for row, hours in enumerate((bill["sft"]["gpu_hours"], bill["grpo"]["gpu_hours"])):
        ax.text(hours, row, f"  ${hours * usd_per_gpu_hour:.2f}", va="center")
    ax.invert_yaxis()
    ax.set_xlim(0, 1.2 * bill["grpo"]["gpu_hours"])
    ax.set(title=f"GPU-hours of one run, at ${usd_per_gpu_hour:g} per GPU-hour", xlabel="GPU-hours")
    figure.legend(loc="outside lower center", ncols=4)
    return figure
