"""StockArithmetic-v1: counts, populations, disjoint partitions, computed labels, exact bytes."""

import json
import re

import pytest

from verifiable_grpo.cli import main
from verifiable_grpo.task import data
from verifiable_grpo.task.statements import TEMPLATES, canonical_response, render_statement
from verifiable_grpo.task.verifier import (
    compute_final_stock,
    normalized_problem,
    score_generated_json,
)

SEED = 20261130
FILES = [
    "MANIFEST.json",
    "input/pages.json",
    "labels/gold.json",
    "labels/train.json",
    "labels/validation.json",
    "labels/warmstart.json",
    "train/pages.json",
    "validation/pages.json",
    "warmstart/pages.json",
]


def _operands(problem):
    return [problem["initial"], *problem["deliveries"], *problem["withdrawals"]]


def _tree(directory):
    return {
        p.relative_to(directory).as_posix(): p.read_bytes()
        for p in sorted(directory.rglob("*"))
        if p.is_file()
    }


@pytest.fixture(scope="module")
def problem_set():
    return data.generate_problem_set(SEED)


@pytest.fixture(scope="module")
def dataset(tmp_path_factory):
    out = tmp_path_factory.mktemp("stock") / "data"
    manifest = data.write_dataset(out, SEED)
    return out, manifest


# ---------------------------------------------------------------------------------------
# The problem set
# ---------------------------------------------------------------------------------------
def test_counts(problem_set):
    assert {split: len(rows) for split, rows in problem_set.items()} == {
        "warmstart": 128,
        "train": 872,
        "validation": 200,
        "test": 200,
    }
    test_populations = [pop for _, pop in problem_set["test"]]
    assert (test_populations.count("ID50"), test_populations.count("OOD100")) == (100, 100)


def test_learning_splits_are_id50(problem_set):
    for split in ("warmstart", "train", "validation"):
        for problem, population in problem_set[split]:
            assert population == "ID50"
            assert all(0 <= v <= 50 for v in _operands(problem)), problem


def test_test_populations_keep_their_ranges(problem_set):
    for problem, population in problem_set["test"]:
        operands = _operands(problem)
        assert all(type(v) is int and 0 <= v <= 100 for v in operands)
        if population == "ID50":
            assert max(operands) <= 50, problem
        else:
            assert population == "OOD100" and max(operands) > 50, problem


def test_every_problem_is_valid_and_final_stock_within_300(problem_set):
    for rows in problem_set.values():
        for problem, _ in rows:
            assert 0 <= compute_final_stock(problem) <= 300


def test_no_normalized_problem_repeats_or_crosses_a_partition(problem_set):
    keys = {split: [normalized_problem(p) for p, _ in rows] for split, rows in problem_set.items()}
    everything = [k for ks in keys.values() for k in ks]
    assert len(everything) == len(set(everything)) == 1400
    splits = list(keys)
    for i, a in enumerate(splits):
        for b in splits[i + 1 :]:
            assert not set(keys[a]) & set(keys[b]), (a, b)


def test_deduplication_holds_when_the_generator_repeats_itself(monkeypatch):
    """With the real generator collisions are rare; force them with a small, permuted pool."""
    id_pool = [(i, a, a + 1) for i in range(51) for a in range(26)]  # 1,326 keys
    ood_pool = [(i, 0, d) for i in range(51, 101) for d in (1, 2, 3)]  # 150 keys

    def repeating_generator(rng, maximum):
        pool = id_pool if maximum == 50 else ood_pool + id_pool
        initial, a, b = rng.choice(pool)
        deliveries = [a, b] if rng.random() < 0.5 else [b, a]  # a permutation, same key
        return {"initial": initial, "deliveries": deliveries, "withdrawals": [0, 0]}

    monkeypatch.setattr(data, "generate_problem", repeating_generator)
    problem_set = data.generate_problem_set(1)
    keys = [normalized_problem(p) for rows in problem_set.values() for p, _ in rows]
    assert len(keys) == len(set(keys)) == 1400
    assert all(max(_operands(p)) > 50 for p, pop in problem_set["test"] if pop == "OOD100")


def test_the_two_test_populations_are_mixed_in_order(problem_set):
    first_half = [pop for _, pop in problem_set["test"][:100]]
    assert 0 < first_half.count("OOD100") < 100


def test_generation_is_deterministic_and_depends_on_the_seed(problem_set):
    assert data.generate_problem_set(SEED) == problem_set
    assert data.generate_problem_set(SEED + 1) != problem_set


@pytest.mark.parametrize("seed", [None, "1", 1.0, True])
def test_seed_must_be_an_integer(seed, tmp_path):
    with pytest.raises(ValueError, match="seed must be an integer"):
        data.generate_problem_set(seed)
    with pytest.raises(ValueError, match="seed must be an integer"):
        data.write_dataset(tmp_path / "x", seed)


# ---------------------------------------------------------------------------------------
# The files
# ---------------------------------------------------------------------------------------
def test_written_files_and_manifest(dataset):
    out, manifest = dataset
    assert sorted(_tree(out)) == sorted(FILES)
    assert manifest == json.loads((out / "MANIFEST.json").read_text())
    assert manifest["seed"] == SEED and manifest["dataset"] == "StockArithmetic-v1"
    assert manifest["counts"] == {
        "warmstart": 128,
        "train": 872,
        "validation": 200,
        "test": 200,
        "test_ID50": 100,
        "test_OOD100": 100,
    }
    assert sorted(manifest["files"]) == sorted(f for f in FILES if f != "MANIFEST.json")
    for name, entry in manifest["files"].items():
        payload = (out / name).read_bytes()
        assert entry["bytes"] == len(payload)
        assert payload.endswith(b"\n")


def test_pages_and_labels_match_the_problem_set(dataset, problem_set):
    out, _ = dataset
    for split in ("warmstart", "train", "validation"):
        examples = data.read_examples(out, split)
        assert [(e["problem"], e["population"]) for e in examples] == problem_set[split]
        for index, example in enumerate(examples):
            assert example["document_id"] == f"sa-{split}-{index:04d}"
            assert example["split"] == split
            assert example["warmstart"] is (split == "warmstart")
    gold = data.read_gold(out)
    pages = data.read_test_inputs(out)
    assert [(gold[p["document_id"]]["problem"], p["population"]) for p in pages] == problem_set[
        "test"
    ]


def test_labels_are_computed_and_every_target_earns_reward_one(dataset):
    out, _ = dataset
    labels = [e for s in ("warmstart", "train", "validation") for e in data.read_examples(out, s)]
    labels += list(data.read_gold(out).values())
    assert len(labels) == 1400
    for label in labels:
        expected = compute_final_stock(label["problem"])
        assert label["final_stock"] == expected
        assert label["response"] == canonical_response(expected)
        assert score_generated_json(label["response"], "eos", label["problem"]) == {
            "valid": True,
            "value": expected,
            "reason": None,
            "reward": 1,
            "expected": expected,
        }


def test_statements_come_from_the_shared_templates(dataset):
    out, _ = dataset
    used = set()
    examples = [e for s in ("warmstart", "train", "validation") for e in data.read_examples(out, s)]
    gold = data.read_gold(out)
    examples += [{**p, **gold[p["document_id"]]} for p in data.read_test_inputs(out)]
    for example in examples:
        renders = [render_statement(example["problem"], t) for t in range(len(TEMPLATES))]
        assert example["statement"] in renders
        used.add(renders.index(example["statement"]))
    assert used == set(range(len(TEMPLATES)))


def test_test_pages_carry_no_answer(dataset):
    out, _ = dataset
    pages = data.read_test_inputs(out)
    assert len(pages) == 200
    for page in pages:
        assert set(page) == {"document_id", "split", "population", "statement"}
        assert page["split"] == "test"
        assert re.fullmatch(r"sa-test-\d{4}", page["document_id"])
        assert "final_stock" not in page["statement"]
    raw = (out / "input" / "pages.json").read_text()
    assert "final_stock" not in raw and "response" not in raw


def test_document_ids_are_unique_and_positional(dataset):
    out, _ = dataset
    ids = [
        e["document_id"]
        for s in ("warmstart", "train", "validation")
        for e in data.read_examples(out, s)
    ] + list(data.read_gold(out))
    assert len(ids) == len(set(ids)) == 1400
    assert all(re.fullmatch(r"sa-(warmstart|train|validation|test)-\d{4}", i) for i in ids)


def test_two_writes_are_byte_identical_and_another_seed_differs(dataset, tmp_path):
    out, _ = dataset
    data.write_dataset(tmp_path / "again", SEED)
    assert _tree(tmp_path / "again") == _tree(out)
    data.write_dataset(tmp_path / "other", SEED + 1)
    other = _tree(tmp_path / "other")
    assert sorted(other) == sorted(_tree(out))
    assert all(other[name] != payload for name, payload in _tree(out).items())
    assert data.dataset_sha256(tmp_path / "again") == data.dataset_sha256(out)
    assert data.dataset_sha256(tmp_path / "other") != data.dataset_sha256(out)


def test_an_empty_existing_folder_is_accepted(tmp_path):
    (tmp_path / "empty").mkdir()
    data.write_dataset(tmp_path / "empty", 3)
    assert (tmp_path / "empty" / "MANIFEST.json").is_file()


def test_a_non_empty_folder_is_refused_and_left_alone(tmp_path):
    out = tmp_path / "used"
    out.mkdir()
    (out / "notes.txt").write_text("keep me")
    with pytest.raises(FileExistsError, match="not an empty folder"):
        data.write_dataset(out, SEED)
    assert _tree(out) == {"notes.txt": b"keep me"}


def test_a_file_in_place_of_the_folder_is_refused(tmp_path):
    (tmp_path / "file").write_text("x")
    with pytest.raises(FileExistsError):
        data.write_dataset(tmp_path / "file", SEED)


# ---------------------------------------------------------------------------------------
# Reading with the manifest
# ---------------------------------------------------------------------------------------
@pytest.fixture()
def fresh(tmp_path):
    out = tmp_path / "data"
    data.write_dataset(out, SEED)
    return out


def test_dataset_sha256_is_the_manifest_hash(fresh):
    import hashlib

    assert (
        data.dataset_sha256(fresh)
        == hashlib.sha256((fresh / "MANIFEST.json").read_bytes()).hexdigest()
    )


@pytest.mark.parametrize(
    "name, reader",
    [
        ("train/pages.json", lambda d: data.read_examples(d, "train")),
        ("labels/train.json", lambda d: data.read_examples(d, "train")),
        ("input/pages.json", data.read_test_inputs),
        ("labels/gold.json", data.read_gold),
        ("labels/warmstart.json", data.dataset_sha256),
    ],
    ids=["train-page", "train-label", "test-input", "gold", "any-file-via-sha256"],
)
def test_a_changed_file_is_named(fresh, name, reader):
    path = fresh / name
    path.write_bytes(path.read_bytes().replace(b"sa-", b"sb-", 1))
    with pytest.raises(ValueError, match=re.escape(name) + " changed since MANIFEST.json"):
        reader(fresh)


def test_a_missing_listed_file_is_named(fresh):
    (fresh / "labels" / "validation.json").unlink()
    with pytest.raises(FileNotFoundError, match="validation.json is listed in the manifest"):
        data.read_examples(fresh, "validation")


def test_without_a_manifest_reading_still_checks_the_solver(fresh):
    (fresh / "MANIFEST.json").unlink()
    assert len(data.read_examples(fresh, "warmstart")) == 128
    with pytest.raises(FileNotFoundError, match="MANIFEST.json is missing"):
        data.dataset_sha256(fresh)
    labels = json.loads((fresh / "labels" / "warmstart.json").read_text())
    labels[0]["final_stock"] += 1
    (fresh / "labels" / "warmstart.json").write_text(json.dumps(labels))
    with pytest.raises(ValueError, match="sa-warmstart-0000: label disagrees with the solver"):
        data.read_examples(fresh, "warmstart")


def test_test_inputs_are_read_without_labels(fresh):
    for path in (fresh / "labels").iterdir():
        path.unlink()
    (fresh / "labels").rmdir()
    assert len(data.read_test_inputs(fresh)) == 200


@pytest.mark.parametrize("split", ["test", "gold", "input"])
def test_read_examples_refuses_non_learning_splits(fresh, split):
    with pytest.raises(ValueError, match="split must be one of"):
        data.read_examples(fresh, split)


# ---------------------------------------------------------------------------------------
# The learning view
# ---------------------------------------------------------------------------------------
def test_learning_view_holds_no_test_material(dataset, tmp_path):
    out, _ = dataset
    view = data.write_learning_view(out, tmp_path / "view")
    files = _tree(view)
    assert sorted(files) == sorted(
        f for f in FILES if not f.startswith("input/") and f != "labels/gold.json"
    )
    test_ids = set(data.read_gold(out))
    blob = b"".join(files.values())
    assert b"sa-test-" not in blob
    assert all(
        files[name] == (out / name).read_bytes() for name in files if name != "MANIFEST.json"
    )
    manifest = json.loads(files["MANIFEST.json"])
    assert manifest["kind"] == "learning-view"
    assert manifest["source_dataset_sha256"] == data.dataset_sha256(out)
    assert manifest["counts"] == {"warmstart": 128, "train": 872, "validation": 200}
    data.assert_learning_only(view)
    for split in ("warmstart", "train", "validation"):
        assert data.read_examples(view, split) == data.read_examples(out, split)
        assert not {e["document_id"] for e in data.read_examples(view, split)} & test_ids
    assert len(data.dataset_sha256(view)) == 64


def test_assert_learning_only_raises_on_a_full_dataset(dataset):
    out, _ = dataset
    with pytest.raises(ValueError, match="labels/gold.json"):
        data.assert_learning_only(out)


@pytest.mark.parametrize(
    "intruder",
    ["labels/gold.json", "input/pages.json", "inference/grpo/greedy.json"],
    ids=["gold", "test-inputs", "inference-outputs"],
)
def test_assert_learning_only_finds_any_intruder(dataset, tmp_path, intruder):
    out, _ = dataset
    view = data.write_learning_view(out, tmp_path / "view")
    (view / intruder).parent.mkdir(parents=True, exist_ok=True)
    (view / intruder).write_text("[]")
    with pytest.raises(ValueError, match="not a learning-only view"):
        data.assert_learning_only(view)


def test_learning_view_refuses_a_used_destination(dataset, tmp_path):
    out, _ = dataset
    (tmp_path / "view").mkdir()
    (tmp_path / "view" / "x").write_text("x")
    with pytest.raises(FileExistsError):
        data.write_learning_view(out, tmp_path / "view")


def test_learning_view_refuses_a_tampered_source(fresh, tmp_path):
    (fresh / "train" / "pages.json").write_text("[]\n")
    with pytest.raises(ValueError, match="train/pages.json changed"):
        data.write_learning_view(fresh, tmp_path / "view")
    assert not (tmp_path / "view").exists()


# ---------------------------------------------------------------------------------------
# Command line
# ---------------------------------------------------------------------------------------
def test_cli_writes_the_dataset_and_prints_a_summary(tmp_path, capsys):
    assert main(["data", "--out", str(tmp_path / "cli"), "--seed", str(SEED)]) == 0
    printed = capsys.readouterr().out
    assert (
        "warmstart 128, train 872, validation 200, test 200, test_ID50 100, test_OOD100 100"
        in printed
    )
    assert data.dataset_sha256(tmp_path / "cli") in printed


def test_cli_default_seed_comes_from_the_config(tmp_path, capsys):
    from verifiable_grpo.core.config import load_config

    assert main(["data", "--out", str(tmp_path / "cli"), "--config", "smoke"]) == 0
    seed = load_config("smoke")["data"]["seed"]
    assert json.loads((tmp_path / "cli" / "MANIFEST.json").read_text())["seed"] == seed
    assert f"(seed {seed})" in capsys.readouterr().out
