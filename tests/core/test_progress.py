import io

from verifiable_grpo.core import progress


def test_environment_disables_bars_at_call_time(monkeypatch):
    monkeypatch.setenv("TQDM_DISABLE", "1")
    assert progress.tqdm(range(3)).disable
    monkeypatch.setenv("TQDM_DISABLE", "0")
    assert not progress.tqdm(range(3)).disable
    assert progress.tqdm(range(3), disable=True).disable  # an explicit request wins
    monkeypatch.delenv("TQDM_DISABLE")
    assert not progress.disabled_by_environment()


class _Terminal(io.StringIO):
    def isatty(self):
        return True


def test_a_bar_written_to_a_log_redraws_rarely_and_a_terminal_bar_often(monkeypatch):
    monkeypatch.delenv("TQDM_DISABLE", raising=False)
    log, terminal = io.StringIO(), _Terminal()
    assert progress.tqdm(range(3), file=log).mininterval == progress.LOG_INTERVAL
    assert progress.tqdm(range(3), file=terminal).mininterval < 1
    assert progress.tqdm(range(3), file=log, mininterval=2).mininterval == 2  # caller wins
    # 2,000 quick steps: the log holds the opening and the closing redraw, nothing between
    log = io.StringIO()
    for _ in progress.tqdm(range(2000), file=log, miniters=1):
        pass
    assert log.getvalue().count("\r") == 2 and "2000/2000" in log.getvalue()
    # the same steps on a terminal, with no interval asked, redraw at every step
    for _ in progress.tqdm(range(2000), file=terminal, miniters=1, mininterval=0):
        pass
    assert terminal.getvalue().count("\r") > 100


def test_a_closed_or_bare_stream_counts_as_a_log():
    closed = io.StringIO()
    closed.close()
    assert not progress._is_terminal(closed) and not progress._is_terminal(object())
