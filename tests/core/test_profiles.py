"""Profiles that extend a base: what they resolve to, and how a bad `extends` is refused."""

from __future__ import annotations

import re

import pytest
import yaml

from verifiable_grpo.core import config as cfg

# SHA-256 of each profile's canonical JSON as load_config resolved it before profiles
# extended a base (commit 5ee4d31). Recorded runs store this hash: it must never move.
RESOLVED_SHA256 = {
    "tiny": "d67cb700444fa7c35227b01e331135fce97ed6e7e71a6409bafff996d36f602c",
    "smoke": "a2c87af3da5111be17792ef3cd0f8db3c09918e8b6ae321093234f92aa3cbd63",
    "qwen": "e873a385ec73faf8a1a94a03a639a13b2168b9c283d0b325f840d9334d6533ef",
    "qwen-fast": "d5af516f94a3b9de2f84e494127056dae2c3a786bfc8b044edc81b9a880eac02",
    "qwen-live": "0ef0f278a187403b3dad020bdff49a98afeebe91665eaadd45d9b71ce557594b",
}


def test_every_profile_resolves_to_its_pinned_hash():
    assert cfg.known_profiles() == sorted(RESOLVED_SHA256)
    for name, digest in RESOLVED_SHA256.items():
        assert cfg.config_hash(cfg.load_config(name)) == digest, name


def _changed_lines(text: str) -> list[tuple[str, str, str]]:
    """(section, key, comment on the key's line or its section's line) per leaf a file sets."""
    rows, section, section_comment = [], "", ""
    for line in text.splitlines():
        match = re.match(r"^( *)([A-Za-z_]+):([^#]*)(#.*)?$", line)
        if not match:
            continue
        indent, key, value, comment = match.groups()
        if not indent:
            section, section_comment = key, comment or ""
            if value.strip():
                rows.append(("", key, comment or ""))
        elif value.strip():
            rows.append((section, key, (comment or "") + section_comment))
    return rows


@pytest.mark.parametrize("name", sorted(RESOLVED_SHA256))
def test_a_profile_says_why_for_each_change(name):
    text = cfg.config_path(name).read_text()
    rows = _changed_lines(text)
    assert rows[0][1] == cfg.EXTENDS, f"{name} starts from a base"
    silent = [f"{s}.{k}" for s, k, why in rows if not why and k not in (cfg.EXTENDS, "profile")]
    assert silent == [], f"{name}: a change without its reason"
    assert len(rows) < 30, f"{name} repeats its base instead of extending it"


def test_the_base_is_not_a_profile():
    with pytest.raises(cfg.ConfigError, match="profile: missing"):
        cfg.load_config("base")
    assert "base" not in cfg.known_profiles()


def test_a_copy_anywhere_extends_a_shipped_profile(tmp_path):
    path = tmp_path / "mine.yaml"
    path.write_text("extends: smoke\nprofile: mine\ngrpo:\n  iterations: 3\n")
    smoke, mine = cfg.load_config("smoke"), cfg.load_config(path)
    assert mine["grpo"]["iterations"] == 3 and mine["profile"] == "mine"
    mine = mine.replaced(grpo={"iterations": 4}, profile="smoke")
    assert {k: v for k, v in mine.items() if k != "_path"} == {
        k: v for k, v in smoke.items() if k != "_path"
    }


@pytest.mark.parametrize(
    "extends, said",
    [
        ("nowhere", "extends: no profile or base 'nowhere'; known: ['base', "),
        ("[1, 2]", "extends: must name a profile or base, got [1, 2]"),
        ("SELF", "extends: "),
    ],
)
def test_a_bad_extends_is_one_line_naming_the_key(tmp_path, extends, said):
    path = tmp_path / "bad.yaml"
    path.write_text(f"extends: {str(path) if extends == 'SELF' else extends}\nprofile: bad\n")
    with pytest.raises(cfg.ConfigError) as err:
        cfg.load_config(path)
    (problem,) = err.value.problems
    assert problem.startswith(f"{path}: {said}")
    if extends == "SELF":
        assert problem.endswith("leads back to this file")


def test_the_config_command_prints_the_resolved_profile(capsys):
    from verifiable_grpo.cli import main

    assert main(["config", "--config", "smoke"]) == 0
    header, body = capsys.readouterr().out.split("\n", 1)
    assert header.endswith(RESOLVED_SHA256["smoke"])
    assert yaml.safe_load(body) == {
        k: v for k, v in cfg.load_config("smoke").items() if k != "_path"
    }


def test_a_bad_extends_exits_2_before_any_stage(tmp_path, capsys):
    from verifiable_grpo.cli import main

    path = tmp_path / "bad.yaml"
    path.write_text("extends: nowhere\nprofile: bad\n")
    with pytest.raises(SystemExit) as stop:
        main(["grpo", "--config", str(path)])
    assert stop.value.code == 2
    assert capsys.readouterr().err.startswith(f"error: {path}: extends: no profile or base")
