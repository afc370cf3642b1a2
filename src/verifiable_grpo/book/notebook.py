"""Small helpers that keep the chapters thin: profile choice, recorded runs, tables.

Everything printed through these helpers is deterministic on CPU, so nbval can compare
it with the committed outputs; times and paths are masked by notebooks/sanitize.cfg.

Numbers computed live (a training step, sampling, a forward pass) are exact only on the
machine that computed them: another CPU's kernels sum in another order and change their
last digits (a training step can move the fourth decimal). Chapters print such numbers
with `significant`, with a coarse `digits`, or as a check against a stated tolerance;
`round_numbers` and `rounded_prints` do the same for text the package prints itself.
"""

from __future__ import annotations

import contextlib
import html
import io
import math
import os
import re
import sys
from collections.abc import Iterable, Sequence
from decimal import ROUND_HALF_EVEN, Decimal
from pathlib import Path
from typing import Any

from verifiable_grpo.core.config import read_json, repo_root
from verifiable_grpo.core.config_schema import Profile

RECORDED = Path("data") / "recorded"


# A chapter's live cells on a GPU: Qwen2.5-0.5B with a few iterations (configs/qwen-live.yaml),
# never the full qwen budgets (hours; `python -m verifiable_grpo run --config qwen` is for that).
LIVE_GPU_PROFILE = "qwen-live"
# A test names another profile here (a qwen-shaped stand-in) to run the GPU path on a CPU.
LIVE_PROFILE_ENV = "VERIFIABLE_GRPO_LIVE_PROFILE"
_chapter_folder = None


def on_gpu() -> bool:
    import torch

    return torch.cuda.is_available()


def choose_profile() -> str:
    """The profile of a chapter's live cells: `qwen-live` where a CUDA GPU is present (Colab),
    `smoke` elsewhere. Also sends every temporary folder the chapter makes into one folder of
    this kernel, removed when the kernel ends (a qwen state is 5.5 GB: none is left in /tmp)."""
    clean_temporary_folders()
    chosen = os.environ.get(LIVE_PROFILE_ENV)
    if chosen:
        return chosen
    return LIVE_GPU_PROFILE if on_gpu() else "smoke"


def clean_temporary_folders() -> Path:
    """tempfile's folder becomes a TemporaryDirectory of this process (deleted at exit), so
    the run folders a chapter makes with tempfile.mkdtemp go with the kernel."""
    import tempfile

    global _chapter_folder
    if _chapter_folder is None:
        _chapter_folder = tempfile.TemporaryDirectory(prefix="verifiable-grpo-chapter-")
        tempfile.tempdir = _chapter_folder.name
    return Path(_chapter_folder.name)


def show_progress() -> bool:
    """Progress bars for long live cells: on where they are long (a GPU running Qwen), off
    where nbval compares the streams (CPU)."""
    return on_gpu() or bool(os.environ.get(LIVE_PROFILE_ENV))


def quiet() -> None:
    """No progress bars or library chatter in executed notebooks (nbval compares streams);
    on a GPU the bars stay on, the live cells being long there."""
    if not show_progress():
        os.environ.setdefault("TQDM_DISABLE", "1")
    os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    import warnings

    warnings.filterwarnings("ignore")
    try:  # transformers draws its own bars (e.g. "Loading weights") whatever TQDM_DISABLE says
        from transformers.utils import logging as hf_logging

        hf_logging.set_verbosity_error()
        hf_logging.disable_progress_bar()
    except ImportError:
        pass


def recorded_dir(profile: str = "tiny") -> Path:
    return repo_root() / RECORDED / profile


def load_recorded(name: str, profile: str = "tiny") -> Any:
    """A file of a recorded run, e.g. load_recorded("results.json")."""
    path = recorded_dir(profile) / name
    if not path.is_file():
        raise FileNotFoundError(
            f"{path} is missing: the recorded {profile} run has not been "
            "exported (python -m verifiable_grpo report --config "
            f"{profile})"
        )
    return read_json(path)


def fmt(value: Any, digits: int = 3) -> str:
    if isinstance(value, bool) or value is None:
        return str(value)
    if isinstance(value, float):
        text = f"{value:.{digits}f}"
        # -1e-9 and +1e-9 both print as zero; a sign that flips on rounding noise would
        # make nbval fail on another machine for no reason.
        return text[1:] if text.startswith("-") and float(text) == 0 else text
    return str(value)


def significant(value: float, digits: int = 2, below: float | None = None) -> str:
    """`value` rounded to `digits` significant digits: 0.29315 -> "0.29", 1.26e-4 -> "0.00013".

    For live numbers that span several magnitudes (a KL per prefix), where a fixed number of
    decimals would either hide the small ones or print noise in the large ones. With
    `below`, any |value| under it prints as "<below": a quantity that is zero up to rounding
    would otherwise print its rounding noise, which differs between CPUs."""
    value = float(value)
    if not math.isfinite(value):
        return str(value)
    if below is not None and abs(value) < below:
        return "<" + re.sub(r"e([-+])0*(\d)", r"e\1\2", f"{below:g}").replace("e+", "e")
    if value == 0:
        return "0"
    rounded = f"{value:.{digits - 1}e}"  # correctly rounded mantissa and exponent
    exponent = int(rounded.split("e")[1])
    if exponent < -4:
        return rounded
    return f"{float(rounded):.{max(digits - 1 - exponent, 0)}f}"


# A decimal number, optionally in scientific notation, not part of a word, a version
# ("2.13.0") or a hex digest.
_NUMBER = re.compile(r"(?<![\w.])(-?\d+\.\d+)(?:[eE]([-+]?\d+))?(?![\w.])")


def round_numbers(text: str, decimals: int = 3, figures: int = 2) -> str:
    """`text` with every decimal number that carries more than `decimals` places rounded to
    `decimals` places, and every number in scientific notation to `figures` significant
    digits.

    For messages and progress lines written by the package, whose live numbers carry more
    digits than survive another CPU ("validation NLL 1.4231" -> "validation NLL 1.423").
    Integers are left alone. Rounding works on the printed text (half to even)."""

    def replace(match: re.Match) -> str:
        mantissa, exponent = match.group(1), match.group(2)
        if exponent is None:
            if len(mantissa.split(".")[1]) <= decimals:
                return mantissa
            out = str(Decimal(mantissa).quantize(Decimal(1).scaleb(-decimals), ROUND_HALF_EVEN))
            return out[1:] if out.startswith("-") and Decimal(out) == 0 else out
        scaled = Decimal(mantissa).quantize(Decimal(1).scaleb(1 - figures), ROUND_HALF_EVEN)
        power = int(exponent)
        if abs(scaled) >= 10:  # 9.996e-04 -> 1.0e-03, not 10.0e-04
            scaled, power = (
                (scaled / 10).quantize(Decimal(1).scaleb(1 - figures), ROUND_HALF_EVEN),
                power + 1,
            )
        return f"{scaled}e{power:+03d}"

    return _NUMBER.sub(replace, text)


class _RoundingWriter(io.TextIOBase):
    """Forwards whole lines to `target` through round_numbers."""

    def __init__(self, target, decimals: int, figures: int):
        self.target, self.decimals, self.figures = target, decimals, figures
        self.pending = ""

    def writable(self) -> bool:
        return True

    def write(self, text: str) -> int:
        self.pending += text
        *lines, self.pending = self.pending.split("\n")
        for line in lines:
            self.target.write(round_numbers(line, self.decimals, self.figures) + "\n")
        return len(text)

    def flush(self) -> None:
        self.target.flush()

    def finish(self) -> None:
        if self.pending:
            self.target.write(round_numbers(self.pending, self.decimals, self.figures))
            self.pending = ""
        self.flush()


@contextlib.contextmanager
def rounded_prints(decimals: int = 3, figures: int = 2):
    """Within the block, everything printed to stdout goes through round_numbers.

    The package's SFT loop writes a line per epoch with the validation NLL to 4 decimals;
    computed live, the fourth decimal is not the same on every CPU. The lines stay visible,
    at a precision that is."""
    writer = _RoundingWriter(sys.stdout, decimals, figures)
    try:
        with contextlib.redirect_stdout(writer):
            yield
    finally:
        writer.finish()


class Table:
    """A table that shows as HTML in the book and as fixed-width text for nbval.

    `digits` rounds floats: one number for every column, or one per column (live values
    often need fewer decimals than recorded ones in the same table). Strings are shown as
    they are, so a cell can hold a `significant(...)` value."""

    def __init__(
        self,
        columns: Sequence[str],
        rows: Iterable[Sequence[Any]],
        digits: int | Sequence[int] = 3,
        title: str | None = None,
    ):
        self.columns = list(columns)
        per_column = [digits] * len(self.columns) if isinstance(digits, int) else list(digits)
        if len(per_column) != len(self.columns):
            raise ValueError(f"{len(per_column)} digits for {len(self.columns)} columns")
        self.rows = []
        for row in rows:
            row = list(row)
            if len(row) != len(self.columns):
                raise ValueError(f"row {row} has {len(row)} cells for {len(self.columns)} columns")
            self.rows.append([fmt(v, d) for v, d in zip(row, per_column)])
        self.title = title

    def __repr__(self) -> str:
        widths = [
            max(len(str(c)), *(len(r[i]) for r in self.rows)) if self.rows else len(c)
            for i, c in enumerate(self.columns)
        ]

        def line(cells) -> str:
            return "  ".join(str(c).ljust(w) for c, w in zip(cells, widths)).rstrip()

        out = [self.title] if self.title else []
        out += [line(self.columns), line("-" * w for w in widths)]
        out += [line(r) for r in self.rows]
        return "\n".join(out)

    def _repr_html_(self) -> str:
        head = "".join(f"<th>{html.escape(str(c))}</th>" for c in self.columns)
        body = "".join(
            "<tr>" + "".join(f"<td>{html.escape(v)}</td>" for v in r) + "</tr>" for r in self.rows
        )
        caption = f"<caption>{html.escape(self.title)}</caption>" if self.title else ""
        return (
            f'<table class="vg-table">{caption}<thead><tr>{head}</tr></thead>'
            f"<tbody>{body}</tbody></table>"
        )


def show(figure):
    """Display a matplotlib Figure as a PNG (works without pyplot's inline backend)."""
    from IPython.display import Image

    from verifiable_grpo.book.widgets import figure_png

    return Image(figure_png(figure))


def recorded_policy(name: str, config: Profile, profile: str = "tiny"):
    """(model, tokenizer, metadata) of a policy saved with a recorded run, e.g. "warmstart".

    Only the tiny run ships policies (data/recorded/tiny/policies/*.safetensors, a few MB
    each), so chapters can sample from the very models whose results they show."""
    from verifiable_grpo.core.model import load_tokenizer, reload_policy

    path = recorded_dir(profile) / "policies" / f"{name}.safetensors"
    if not path.is_file():
        raise FileNotFoundError(f"{path} is missing: export the recorded run first")
    listed = read_json(recorded_dir(profile) / "provenance.json")["files"]
    model, metadata = reload_policy(
        path, config, expected_sha256=listed[f"policies/{name}.safetensors"]
    )
    return model, load_tokenizer(config), metadata


def live_warmstart_policy(config: Profile, out):
    """The warm-start policy of a live run folder (what its first rollouts were sampled
    from), loaded for `config`'s model: right for any profile's vocabulary."""
    from verifiable_grpo.core.model import reload_policy
    from verifiable_grpo.core.runfolder import RunFolder

    folder = RunFolder(out)
    model, _ = reload_policy(
        folder.policy("warmstart"), config, folder.recorded_policy_sha256("warmstart")
    )
    return model


def live_run_from_recorded_warmstart(config: Profile, profile: str = "tiny"):
    """A fresh run folder holding a warm-start policy for a live GRPO demo.

    On the tiny base (smoke and tiny profiles) the smoke warm start is too short to teach
    the JSON format, so a live GRPO demo from it would only show zero rewards: the folder
    gets the recorded run's warm-start policy instead (a real policy exported with that
    run). Any other model (the qwen profile on a GPU) gets its own warm start, run here.
    """
    import tempfile

    from verifiable_grpo.core.config import resolve
    from verifiable_grpo.training.sft import ensure_learning_view, run_sft_branch

    out = Path(tempfile.mkdtemp(prefix="grpo-live-"))
    ensure_learning_view(config, out)
    model = config.model
    on_tiny_base = model.source == "local" and resolve(model.path) == resolve("data/tiny-base")
    if on_tiny_base:
        from verifiable_grpo.core.model import save_policy

        # Checked against the recorded SHA-256, then written as this folder's warm start.
        model, _, metadata = recorded_policy("warmstart", config, profile)
        save_policy(
            model,
            out / "checkpoints" / "warmstart-resume.safetensors",
            {
                "source": f"data/recorded/{profile}/policies/warmstart.safetensors",
                "branch": "warmstart",
            },
        )
    else:
        run_sft_branch(config, out, "warmstart", "interrupt")
        run_sft_branch(config, out, "warmstart", "resume")
    return out
