from verifiable_grpo.core import progress


def test_environment_disables_bars_at_call_time(monkeypatch):
    monkeypatch.setenv("TQDM_DISABLE", "1")
    assert progress.tqdm(range(3)).disable
    monkeypatch.setenv("TQDM_DISABLE", "0")
    assert not progress.tqdm(range(3)).disable
    assert progress.tqdm(range(3), disable=True).disable      # an explicit request wins
    monkeypatch.delenv("TQDM_DISABLE")
    assert not progress.disabled_by_environment()
