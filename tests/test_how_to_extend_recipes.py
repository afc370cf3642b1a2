"""The how-to-extend page's variant, profile, chapter, backend and study recipes, performed
as a contributor would.

Each test copies the repository (the files git knows, `data/` linked, not copied) to a
temporary folder, makes the change its recipe describes step by step, and runs the
commands the recipe's steps give in backquotes, read from the page itself: a recipe whose
commands or checks stop working fails here. Slow (tests/slow_tests.py): whole pytest
runs in other processes.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PAGE = ROOT / "book" / "how-to-extend.md"
COMMAND = re.compile(r"`((?:python -m|python scripts/|jupytext|jupyter) ?[^`]+)`")


def steps(title: str) -> dict[int, str]:
    """Step number -> its text, for the recipe under `## title`."""
    section = PAGE.read_text().split(f"## {title}\n", 1)[1].split("\n## ", 1)[0]
    found = re.split(r"^(\d+)\. ", section, flags=re.M)
    return {int(n): text for n, text in zip(found[1::2], found[2::2], strict=True)}


def commands(step: str, **names: str) -> list[list[str]]:
    """The step's commands (not the ones for later edits), placeholders filled in."""
    found = []
    for command in COMMAND.findall(step):
        words = shlex.split(" ".join(command.split()))
        if "--update" in words:
            continue
        for placeholder, value in names.items():
            words = [w.replace(placeholder, value) for w in words]
        if words[0] == "jupyter":  # `jupyter nbconvert ...` is the module nbconvert
            words = ["python", "-m", *words[1:]]
        elif words[0] == "jupytext":
            words = ["python", "-m", *words]
        found.append([sys.executable, *words[1:]])
    return found


def repo_copy(tmp_path: Path) -> Path:
    """What a clone would hold: every file git tracks or would add, data/ linked."""
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=ROOT,
        capture_output=True,
        check=True,
    ).stdout.decode()
    copy = tmp_path / "repo"
    for rel in filter(None, listed.split("\0")):
        source = ROOT / rel
        if rel.startswith("data/") or not source.is_file():
            continue
        (copy / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(source, copy / rel)
    (copy / "data").symlink_to(ROOT / "data")
    return copy


def run(argv: list[str], cwd: Path, copy: Path) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != "VERIFIABLE_GRPO_ROOT"}
    env.update(PYTHONPATH=str(copy / "src"), TQDM_DISABLE="1")
    return subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True, timeout=900)


def run_all(argvs: list[list[str]], cwd: Path, copy: Path) -> None:
    assert argvs, "the step names no command"
    for argv in argvs:
        done = run(argv, cwd, copy)
        assert done.returncode == 0, (
            f"{shlex.join(argv[1:])}:\n{(done.stdout + done.stderr)[-3000:]}"
        )


CHAPTER = "10_a_new_chapter"
CHAPTER_10 = "10_beyond_the_budget"  # an existing chapter, for the study recipe's row
CHAPTER_SOURCE = """
# %% [markdown]
# # A new chapter
#
# **What you will learn.** That the recipe for a chapter works: its pair, its place in the
# table of contents and the map, and its Colab cell.

# %% tags=["colab"]
print("the script writes this cell")

# %%
import verifiable_grpo

print(verifiable_grpo.__name__)
"""


def test_the_chapter_recipe_works_in_a_copy(tmp_path):
    recipe = steps("Add a chapter")
    copy = repo_copy(tmp_path)
    folder = copy / "notebooks" / "part2"
    # 1. the source: a sibling's jupytext header, a title, a Colab cell the script fills in
    header = (folder / "09_quiz.py").read_text().split("# ---\n")[1]
    (folder / f"{CHAPTER}.py").write_text(f"# ---\n{header}# ---\n{CHAPTER_SOURCE}")
    run_all(commands(recipe[1]), copy, copy)
    assert "the script writes this cell" not in (folder / f"{CHAPTER}.py").read_text()
    # 2. pair and execute, from the chapter's folder
    run_all(commands(recipe[2], NN_NAME=CHAPTER), folder, copy)
    assert (folder / f"{CHAPTER}.ipynb").is_file()
    # 3. the table of contents, its place its number: the tenth of Part II, after the quiz
    toc = copy / "_toc.yml"
    quiz = "          - file: notebooks/part2/09_quiz\n"
    assert quiz in toc.read_text()
    toc.write_text(
        toc.read_text().replace(quiz, quiz + f"          - file: notebooks/part2/{CHAPTER}\n")
    )
    # without the map the checks of step 5 fail: they are real checks
    checks = commands(recipe[5], NN_NAME=CHAPTER)
    stale = run([sys.executable, "-m", "pytest", "-q", "tests/book/test_book_map.py"], copy, copy)
    assert stale.returncode != 0 and "map is stale" in stale.stdout, stale.stdout[-3000:]
    # 4. the map, then 5. the checks
    run_all(commands(recipe[4]), copy, copy)
    assert "A new chapter" in (copy / "book" / "part2.md").read_text()
    run_all(checks, copy, copy)


ECHO = '''"""`family run --backend echo`: names each run the lock covers and trains nothing."""

from __future__ import annotations

from verifiable_grpo.part2 import lock as lock_lib


def runs_of(args) -> list[tuple[str, str, int]]:
    lock, _ = lock_lib.read_lock(args.lock)
    arms = args.arms or list(lock["arms"])
    seeds = args.seeds or list(lock["seeds"])
    return [(r, a, s) for r in args.regimes or ["on_policy"] for a in arms for s in seeds]


def run(args) -> int:
    lock, _ = lock_lib.read_lock(args.lock)
    regime = args.regime or "on_policy"
    lock_lib.check_request(lock, args.arm, args.seed, regime)
    print(f"echo: {regime} {args.arm} seed {args.seed}")
    return 0


def run_study(args, runs) -> int:
    lock, _ = lock_lib.read_lock(args.lock)
    for regime, arm, seed in runs:  # every refusal before the first run
        lock_lib.check_request(lock, arm, seed, regime)
    for regime, arm, seed in runs:
        print(f"echo: {regime} {arm} seed {seed}")
    return 0
'''


def test_the_backend_recipe_works_in_a_copy(tmp_path):
    recipe = steps("Add a training backend")
    copy = repo_copy(tmp_path)
    package = copy / "src" / "verifiable_grpo" / "part2"
    # 1.-3. the module and its interface
    (package / "echo_backend.py").write_text(ECHO)
    # 4. one row of BACKENDS
    table = package / "backends.py"
    assert "BACKENDS = {\n" in table.read_text()
    table.write_text(
        table.read_text().replace(
            "BACKENDS = {\n", 'BACKENDS = {\n    "echo": "verifiable_grpo.part2.echo_backend",\n'
        )
    )
    # 5. the checks, then the backend from the shell: a locked run, and one the lock refuses
    tests, command = commands(recipe[5], NAME="echo")
    run_all([tests], copy, copy)
    done = run(command, copy, copy)
    assert done.returncode == 0 and "echo: on_policy grpo seed 11" in done.stdout, done.stderr
    outside = [w if w != "grpo" else "cispo" for w in command]
    refused = run(outside, copy, copy)
    assert refused.returncode == 2, refused.stdout + refused.stderr
    assert "not in the treatment lock" in refused.stderr and refused.stderr.count("\n") == 1


HALFCLIP_ENTRY = """        _entry(
            "grpo_halfclip",
            "grpo with half PPO's clip range: ratio clipped to [0.9, 1.1]",
            clip=ClipInterval(0.1, 0.1),
        ),
"""
HALFCLIP_SOURCE = """    "grpo_halfclip": Source(
        "ref-ppo", "Schulman et al. 2017 (PPO)", "PPO's clip at half its usual range"
    ),
"""


def _insert_after(path: Path, anchor: str, text: str) -> None:
    source = path.read_text()
    assert source.count(anchor) == 1, f"{path.name}: {anchor!r} is not unique"
    path.write_text(source.replace(anchor, anchor + text))


def test_the_variant_recipe_works_in_a_copy(tmp_path):
    """The variant recipe as written: a new clip range in the "newer" section, its source,
    its place in the registry-order test, then the recipe's own checks (which once failed
    here: a study's declared list and a chapter read the section)."""
    recipe = steps("Add a GRPO variant")
    copy = repo_copy(tmp_path)
    training = copy / "src" / "verifiable_grpo" / "training"
    # 1. one entry at the end of the "newer" section
    registry = training / "objectives.py"
    source = registry.read_text()
    end_of_newer = source.index("    # The gspo arm at its paper's clip range")
    newer_close = source.rindex("    ),\n", 0, end_of_newer)
    registry.write_text(source[:newer_close] + HALFCLIP_ENTRY + source[newer_close:])
    # 3. the paper, on the references page already (PPO)
    assert "(ref-ppo)=" in (copy / "book" / "references.md").read_text()
    _insert_after(
        training / "objective_sources.py", "SOURCES: dict[str, Source] = {\n", HALFCLIP_SOURCE
    )
    # 4. nothing: TRL and Part I's loop both run a clip range
    # 5. the registry's order
    # 5. the registry's order, and its advantage for [1, 0, 1, 0] by hand: grpo's, a clip
    # range moves no advantage (sample std + 1e-4, 0.5 / (sqrt(1/3) + 1e-4))
    order_test = copy / "tests" / "training" / "test_objectives.py"
    _insert_after(order_test, '    "grpo_mis",\n', '    "grpo_halfclip",\n')
    _insert_after(order_test, '    "grpo_mis": SAMPLE_A,\n', '    "grpo_halfclip": SAMPLE_A,\n')
    # 9. the recipe's checks
    run_all(commands(recipe[9]), copy, copy)


SLOWER_SMOKE = """# A smoke run with a smaller learning rate, for the profile recipe's test.
extends: smoke
profile: smoke-slow

grpo:
  learning_rate: 5.0e-6             # half of smoke's: does a gentler step still learn?
"""


def test_the_profile_recipe_works_in_a_copy(tmp_path):
    recipe = steps("Add a profile")
    copy = repo_copy(tmp_path)
    # 1. the file, then its resolved SHA-256 from the step's own command
    (copy / "configs" / "smoke-slow.yaml").write_text(SLOWER_SMOKE)
    (printed,) = commands(recipe[1], NAME="smoke-slow")
    done = run(printed, copy, copy)
    assert done.returncode == 0, done.stderr
    digest = re.search(r"SHA-256 ([0-9a-f]{64})", done.stdout).group(1)
    # without its hash the checks of step 2 fail: they are real checks
    checks = commands(recipe[2])
    assert run(checks[0], copy, copy).returncode != 0
    # 2. the hash in RESOLVED_SHA256, then the checks
    _insert_after(
        copy / "tests" / "core" / "test_profiles.py",
        "RESOLVED_SHA256 = {\n",
        f'    "smoke-slow": "{digest}",\n',
    )
    run_all(checks, copy, copy)


SQUARES_STUDY = '''"""Squares: a toy recorded study, written by how-to-extend's study recipe test.

Declared before it runs: RUNS, each the sum of the squares below its bound in BOUNDS."""

from __future__ import annotations

from verifiable_grpo.core import files, preregistration
from verifiable_grpo.core.config import resolve

RUNS = ("below-3", "below-4")
BOUNDS = {"below-3": 3, "below-4": 4}
RECORDED = "data/recorded/squares"


def run(options) -> int:
    out = options.out / "squares"
    preregistration.stamp_folder(out, options.exploratory)
    result = {"runs": {name: sum(i * i for i in range(BOUNDS[name])) for name in RUNS}}
    files.save_json(out / "result.json", result, overwrite=True)
    if options.export:
        export(options)
    return 0


def export(options) -> list:
    result = files.read_json(options.out / "squares" / "result.json")
    return [files.save_json(resolve(RECORDED) / "result.json", result, overwrite=True)]


def read() -> dict:
    return files.read_json(resolve(RECORDED) / "result.json")


def check(record: dict) -> list[str]:
    found = list(record["runs"])
    return [] if found == list(RUNS) else [f"runs: recorded {found}, declared {list(RUNS)}"]
'''


def code_block(step: str) -> str:
    """The step's ```python block, dedented."""
    block = step.split("```python\n", 1)[1].split("```", 1)[0]
    return textwrap.dedent(block)


def own_recorded_folder(copy: Path) -> None:
    """data/ and data/recorded/ as folders of the copy's own (their entries still linked), so
    that a record the recipe exports lands in the copy, never in this checkout."""
    (copy / "data").unlink()
    for source in (ROOT / "data").iterdir():
        if source.name != "recorded":
            (copy / "data" / source.name).parent.mkdir(parents=True, exist_ok=True)
            (copy / "data" / source.name).symlink_to(source)
    for source in (ROOT / "data" / "recorded").iterdir():
        (copy / "data" / "recorded").mkdir(parents=True, exist_ok=True)
        (copy / "data" / "recorded" / source.name).symlink_to(source)


def commit_all(copy: Path) -> None:
    """The recipe's 'commit': the copy as one commit of a repository of its own."""
    for argv in (["init", "-q"], ["add", "-A"], ["commit", "-q", "-m", "declare squares"]):
        git = ["git", "-c", "user.name=recipe", "-c", "user.email=recipe@example.com", *argv]
        subprocess.run(git, cwd=copy, check=True, capture_output=True)


def test_the_study_recipe_works_in_a_copy(tmp_path):
    recipe = steps("Add a recorded study")
    copy = repo_copy(tmp_path)
    own_recorded_folder(copy)
    # 1.-2. the declaration and the protocol, one module
    (copy / "src" / "verifiable_grpo" / "part1" / "squares_study.py").write_text(SQUARES_STUDY)
    # without its STUDIES row the checks of step 4 fail: they are real checks
    checks = commands(recipe[4], NAME="squares")
    stray = run(checks[0], copy, copy)
    assert stray.returncode != 0, stray.stdout[-3000:]
    assert "part1.squares_study.RECORDED" in stray.stdout, stray.stdout[-3000:]
    # 3. one row of STUDIES, as the step writes it
    row = code_block(recipe[3]).replace("NAME", "squares").replace("NN_topic", CHAPTER_10)
    _insert_after(
        copy / "src" / "verifiable_grpo" / "part1" / "studies.py",
        "\nSTUDIES = {\n",
        textwrap.indent(row, "    "),
    )
    # 4. the checks, and the list that says it has not run
    run_all(checks[:1], copy, copy)
    listed = run(checks[1], copy, copy)
    assert re.search(r"^squares +not run ", listed.stdout, flags=re.M), listed.stdout
    # 5. commit, run and record from the clean tree, then check the record
    commit_all(copy)
    run_all(commands(recipe[5], NAME="squares"), copy, copy)
    record = copy / "data" / "recorded" / "squares" / "result.json"
    assert json.loads(record.read_text()) == {"runs": {"below-3": 5, "below-4": 14}}
    assert not (ROOT / "data" / "recorded" / "squares").exists()
    # 6. the chapter's cell reads it through the table
    cell = code_block(recipe[6]).replace("NAME", "squares") + "print(record['runs'])\n"
    read = run([sys.executable, "-c", cell], copy, copy)
    assert read.returncode == 0 and "'below-4': 14" in read.stdout, read.stderr
