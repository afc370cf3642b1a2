"""StockArithmetic-v1: 1,400 distinct problems, their pages, their computed labels.

Layout of a dataset folder (every JSON file has sorted keys, indent 1, a final newline, so
the same seed gives the same bytes):

    warmstart/pages.json  train/pages.json  validation/pages.json    what a learner reads
    input/pages.json                                                 the 200 test inputs
    labels/{warmstart,train,validation,gold}.json                    problems and targets
    MANIFEST.json                                                    sha256 + bytes per file

Pages hold only the statement (the chat instruction is added by `prompts`). Labels hold the
structured problem, the solver's answer and the canonical response built from it. The test
answers live only in labels/gold.json, which the learning view never copies.
"""

from __future__ import annotations

import json
import os
import random
from pathlib import Path

from verifiable_grpo.core.config import read_json, sha256_bytes, sha256_file
from verifiable_grpo.core.config_schema import COUNTS  # the split sizes the profile contract fixes
from verifiable_grpo.task.statements import TEMPLATES, canonical_response, render_statement
from verifiable_grpo.task.verifier import compute_final_stock, generate_problem, normalized_problem

DATASET_NAME = "StockArithmetic-v1"
LEARNING_SPLITS = ("warmstart", "train", "validation")
SPLITS = LEARNING_SPLITS + ("test",)
TEST_COUNTS = {"ID50": 100, "OOD100": 100}
ID_MAXIMUM = 50  # operands of ID50 problems: 0..50
OOD_MAXIMUM = 100  # OOD100: every operand 0..100, at least one above ID_MAXIMUM
MANIFEST = "MANIFEST.json"
TEST_INPUTS = "input/pages.json"
GOLD = "labels/gold.json"
INFERENCE_DIR = "inference"


# ---------------------------------------------------------------------------------------
# Generation (in memory)
# ---------------------------------------------------------------------------------------
def _operands(problem: dict) -> list[int]:
    return [problem["initial"], *problem["deliveries"], *problem["withdrawals"]]


def _draw_unique(rng: random.Random, count: int, maximum: int, seen: set, accept) -> list:
    problems = []
    while len(problems) < count:
        problem = generate_problem(rng, maximum)
        key = normalized_problem(problem)
        if key in seen or not accept(problem):
            continue
        seen.add(key)
        problems.append(problem)
    return problems


def _draw(seed: int) -> dict[str, list[tuple[dict, str, int]]]:
    """split -> [(problem, population, template index)], all from one seeded RNG.

    One `seen` set spans every partition, so a problem (or a permutation of its movements)
    appears at most once in the whole dataset.
    """
    if type(seed) is not int:
        raise ValueError(f"the data seed must be an integer, got {seed!r}")
    rng = random.Random(seed)
    seen: set = set()
    n_id = COUNTS["warmstart"] + COUNTS["train"] + COUNTS["validation"] + TEST_COUNTS["ID50"]
    in_range = _draw_unique(rng, n_id, ID_MAXIMUM, seen, lambda p: True)
    out_of_range = _draw_unique(
        rng, TEST_COUNTS["OOD100"], OOD_MAXIMUM, seen, lambda p: max(_operands(p)) > ID_MAXIMUM
    )
    cut_w = COUNTS["warmstart"]
    cut_t = cut_w + COUNTS["train"]
    cut_v = cut_t + COUNTS["validation"]
    populations = {
        "warmstart": [(p, "ID50") for p in in_range[:cut_w]],
        "train": [(p, "ID50") for p in in_range[cut_w:cut_t]],
        "validation": [(p, "ID50") for p in in_range[cut_t:cut_v]],
        "test": [(p, "ID50") for p in in_range[cut_v:]] + [(p, "OOD100") for p in out_of_range],
    }
    # Mix the two test populations so that any prefix of the test list holds both.
    rng.shuffle(populations["test"])
    return {
        split: [(p, pop, rng.randrange(len(TEMPLATES))) for p, pop in populations[split]]
        for split in SPLITS
    }


def generate_problem_set(seed: int) -> dict[str, list[tuple[dict, str]]]:
    """split -> [(problem, population)] for warmstart, train, validation, test."""
    return {split: [(p, pop) for p, pop, _ in rows] for split, rows in _draw(seed).items()}


def _document_id(split: str, index: int) -> str:
    # Position in its split only: nothing about the problem or its answer.
    return f"sa-{split}-{index:04d}"


# ---------------------------------------------------------------------------------------
# Files
# ---------------------------------------------------------------------------------------
def _json_bytes(value) -> bytes:
    return (json.dumps(value, indent=1, sort_keys=True, ensure_ascii=True) + "\n").encode()


def _require_empty(directory: Path) -> None:
    if directory.exists() and (not directory.is_dir() or any(directory.iterdir())):
        raise FileExistsError(
            f"{directory} exists and is not an empty folder; a dataset is "
            "never written over existing files (choose a new folder)"
        )


def _write_files(directory: Path, files: dict[str, bytes]) -> dict[str, dict]:
    entries = {}
    for name, payload in sorted(files.items()):
        path = directory / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(payload)
        entries[name] = {"sha256": sha256_bytes(payload), "bytes": len(payload)}
    return entries


def _split_files(seed: int) -> tuple[dict[str, bytes], dict]:
    files: dict[str, bytes] = {}
    counts: dict = {}
    for split, rows in _draw(seed).items():
        pages, labels = [], []
        for index, (problem, population, template) in enumerate(rows):
            document_id = _document_id(split, index)
            final_stock = compute_final_stock(problem)
            pages.append(
                {
                    "document_id": document_id,
                    "split": split,
                    "population": population,
                    "statement": render_statement(problem, template),
                }
            )
            labels.append(
                {
                    "document_id": document_id,
                    "problem": problem,
                    "final_stock": final_stock,
                    "response": canonical_response(final_stock),
                    "warmstart": split == "warmstart",
                }
            )
        if split == "test":
            files[TEST_INPUTS] = _json_bytes(pages)
            files[GOLD] = _json_bytes(labels)
            for population in TEST_COUNTS:
                counts[f"test_{population}"] = sum(p["population"] == population for p in pages)
        else:
            files[f"{split}/pages.json"] = _json_bytes(pages)
            files[f"labels/{split}.json"] = _json_bytes(labels)
        counts[split] = len(pages)
    return files, counts


def write_dataset(out_dir, seed: int) -> dict:
    """Write StockArithmetic-v1 into an empty (or absent) folder; returns the manifest.

    MANIFEST.json is written last: a folder without it is an interrupted write.
    """
    out_dir = Path(out_dir)
    _require_empty(out_dir)
    files, counts = _split_files(seed)
    out_dir.mkdir(parents=True, exist_ok=True)
    manifest = {
        "dataset": DATASET_NAME,
        "kind": "full",
        "seed": seed,
        "counts": counts,
        "files": _write_files(out_dir, files),
    }
    (out_dir / MANIFEST).write_bytes(_json_bytes(manifest))
    return manifest


# ---------------------------------------------------------------------------------------
# Reading, with the manifest as the check against edited files
# ---------------------------------------------------------------------------------------
def _manifest(data_dir: Path, required: bool) -> dict | None:
    path = data_dir / MANIFEST
    if not path.is_file():
        if required:
            raise FileNotFoundError(f"{path} is missing: not a finished dataset folder")
        return None
    return read_json(path)  # bounded: size and nesting


def _verify(data_dir: Path, names, manifest: dict | None) -> None:
    """Raise if a named file differs from what the manifest recorded."""
    if manifest is None:
        return
    for name in names:
        entry = manifest["files"].get(name)
        if entry is None:
            raise ValueError(f"{data_dir / MANIFEST} does not list {name}")
        path = data_dir / name
        if not path.is_file():
            raise FileNotFoundError(f"{path} is listed in the manifest but missing")
        size, digest = path.stat().st_size, sha256_file(path)
        if (size, digest) != (entry["bytes"], entry["sha256"]):
            raise ValueError(
                f"{path} changed since {MANIFEST} was written "
                f"(sha256 {digest[:12]}..., {size} bytes; expected "
                f"{entry['sha256'][:12]}..., {entry['bytes']} bytes)"
            )


def _read_verified(data_dir, names: list[str]) -> list:
    data_dir = Path(data_dir)
    _verify(data_dir, names, _manifest(data_dir, required=False))
    return [read_json(data_dir / name) for name in names]


def read_examples(data_dir, split: str) -> list[dict]:
    """Pages of a learning split merged with their labels (checked against the solver)."""
    if split not in LEARNING_SPLITS:
        raise ValueError(
            f"split must be one of {LEARNING_SPLITS}, got {split!r} "
            "(test inputs: read_test_inputs; answers: read_gold)"
        )
    pages, labels = _read_verified(data_dir, [f"{split}/pages.json", f"labels/{split}.json"])
    if [p["document_id"] for p in pages] != [label["document_id"] for label in labels]:
        raise ValueError(f"{split}: pages and labels list different document ids")
    examples = []
    for page, label in zip(pages, labels):
        expected = compute_final_stock(label["problem"])
        if label["final_stock"] != expected or label["response"] != canonical_response(expected):
            raise ValueError(f"{label['document_id']}: label disagrees with the solver")
        examples.append({**page, **label})
    return examples


def read_test_inputs(data_dir) -> list[dict]:
    """The 200 test pages (statements only); labels are never opened."""
    (pages,) = _read_verified(data_dir, [TEST_INPUTS])
    return pages


def read_gold(data_dir) -> dict[str, dict]:
    """document_id -> test label (problem, final_stock, response)."""
    (labels,) = _read_verified(data_dir, [GOLD])
    return {label["document_id"]: label for label in labels}


def dataset_sha256(data_dir) -> str:
    """SHA-256 of MANIFEST.json, after checking every file it lists."""
    data_dir = Path(data_dir)
    manifest = _manifest(data_dir, required=True)
    _verify(data_dir, sorted(manifest["files"]), manifest)
    return sha256_file(data_dir / MANIFEST)


# ---------------------------------------------------------------------------------------
# The learning view: what training code may see
# ---------------------------------------------------------------------------------------
def write_learning_view(data_dir, dest) -> Path:
    """Copy only the learning splits (pages + labels) and a manifest of its own."""
    data_dir, dest = Path(data_dir), Path(dest)
    source_sha256 = dataset_sha256(data_dir)
    source = _manifest(data_dir, required=True)
    _require_empty(dest)
    names = [f"{split}/pages.json" for split in LEARNING_SPLITS]
    names += [f"labels/{split}.json" for split in LEARNING_SPLITS]
    files = {name: (data_dir / name).read_bytes() for name in names}
    dest.mkdir(parents=True, exist_ok=True)
    manifest = {
        "dataset": DATASET_NAME,
        "kind": "learning-view",
        "seed": source["seed"],
        "counts": {s: source["counts"][s] for s in LEARNING_SPLITS},
        "source_dataset_sha256": source_sha256,
        "files": _write_files(dest, files),
    }
    (dest / MANIFEST).write_bytes(_json_bytes(manifest))
    assert_learning_only(dest)
    return dest


def write_train_subset(learning_dir, dest, document_ids: list[str]) -> Path:
    """A learning view whose train split holds only `document_ids` (in that order); the
    warm-start and validation splits are copied unchanged. For GRPO on fixed prompts."""
    learning_dir, dest = Path(learning_dir), Path(dest)
    assert_learning_only(learning_dir)
    source = _manifest(learning_dir, required=True)
    _require_empty(dest)
    pages, labels = _read_verified(learning_dir, ["train/pages.json", "labels/train.json"])
    by_id = {p["document_id"]: (p, label) for p, label in zip(pages, labels)}
    missing = [d for d in document_ids if d not in by_id]
    if missing or not document_ids or len(set(document_ids)) != len(document_ids):
        raise ValueError(
            f"train subset needs distinct ids of the train split; not found: {missing[:3]}"
        )
    names = [f"{split}/pages.json" for split in LEARNING_SPLITS if split != "train"]
    names += [f"labels/{split}.json" for split in LEARNING_SPLITS if split != "train"]
    payload = {name: (learning_dir / name).read_bytes() for name in names}
    payload["train/pages.json"] = _json_bytes([by_id[d][0] for d in document_ids])
    payload["labels/train.json"] = _json_bytes([by_id[d][1] for d in document_ids])
    dest.mkdir(parents=True, exist_ok=True)
    manifest = {
        "dataset": DATASET_NAME,
        "kind": "learning-view",
        "seed": source["seed"],
        "counts": {**source["counts"], "train": len(document_ids)},
        "source_dataset_sha256": source["source_dataset_sha256"],
        "train_subset_of": sha256_bytes(_json_bytes(source)),
        "files": _write_files(dest, payload),
    }
    (dest / MANIFEST).write_bytes(_json_bytes(manifest))
    return dest


def assert_learning_only(data_dir) -> None:
    """ValueError if test inputs, test answers or inference outputs are reachable here."""
    data_dir = Path(data_dir)
    if not data_dir.is_dir():
        raise FileNotFoundError(f"{data_dir} is not a folder")
    found = [
        name
        for name in (GOLD, os.path.dirname(TEST_INPUTS), INFERENCE_DIR)
        if (data_dir / name).exists()
    ]
    manifest = _manifest(data_dir, required=False)
    if manifest is not None:
        found += [
            name
            for name in manifest["files"]
            if name == GOLD or name.startswith(("input/", INFERENCE_DIR + "/"))
        ]
        if manifest.get("kind") != "learning-view":
            found.append(f"{MANIFEST} of kind {manifest.get('kind')!r}")
    if found:
        raise ValueError(
            f"{data_dir} is not a learning-only view; it holds test or inference "
            f"material: {sorted(set(found))}"
        )


def command_data(args) -> int:
    """`python -m verifiable_grpo data --out DIR [--seed N] [--config PROFILE]`."""
    seed = args.seed
    if seed is None:
        from verifiable_grpo.core.config import load_config

        seed = load_config(getattr(args, "config", "tiny")).data.seed
    manifest = write_dataset(args.out, seed)
    counts = manifest["counts"]
    print(f"{DATASET_NAME} written to {args.out} (seed {seed})")
    print(
        "  "
        + ", ".join(
            f"{name} {counts[name]}"
            for name in ("warmstart", "train", "validation", "test", "test_ID50", "test_OOD100")
        )
    )
    print(f"  dataset sha256 {dataset_sha256(args.out)}")
    return 0


__all__ = [
    "generate_problem_set",
    "write_dataset",
    "read_examples",
    "read_test_inputs",
    "read_gold",
    "dataset_sha256",
    "write_learning_view",
    "assert_learning_only",
    "command_data",
    "COUNTS",
    "TEST_COUNTS",
    "SPLITS",
    "LEARNING_SPLITS",
]
