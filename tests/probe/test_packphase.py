"""Before the pack, the server's words are a clone's progress, not its bytes (issue 34
item 2): a server that says ``Counting objects`` and then only keepalives stalls at the
stall timeout, one that counts on slowly does not."""

from __future__ import annotations

from gitnetdiag.probe.packphase import NEWS_BYTES, PackPhaseWatch, last_server_line

ADVERTISED = "Cloning into 'x'...\n"


def _feed(watch: PackPhaseWatch, t_s: float, stderr: str, received: int) -> None:
    watch.see(t_s, stderr=stderr, stderr_bytes=len(stderr), received_bytes=received)


def test_the_servers_last_words() -> None:
    text = ("Cloning into 'x'...\nremote: Enumerating objects: 12, done.        \n"
            "remote: Counting objects:   8% (1/12)        \rremote: Counting objects:  16% "
            "(2/12)        \r")
    assert last_server_line(text) == "Counting objects:  16% (2/12)"
    assert last_server_line(ADVERTISED) == ""


def test_progress_then_keepalives_is_a_stall_of_the_pack_phase() -> None:
    """0.1 MiB of advancing progress in the first second, then a 5-byte keepalive every
    0.5 s: the bytes still grow, the clone stalls 3 s after the last new line, and the
    server's last words are kept to name it."""
    watch = PackPhaseWatch(stall_timeout_s=3.0)
    _feed(watch, 0.25, ADVERTISED, 1014)
    stderr, received = ADVERTISED, 1014
    for i in range(1, 5):  # the burst of progress
        for n in range(500 * (i - 1), 500 * i):
            stderr += f"remote: Counting objects:   {n // 1000}% ({n}/100000)        \r"
        received += 25_000
        _feed(watch, 0.25 + 0.25 * i, stderr, received)
    for step in range(1, 12):  # 1.5 to 4.0 s: quiet for less than 3 s
        received += 5
        _feed(watch, 1.25 + 0.25 * step, stderr, received)
        assert not watch.stalled(1.25 + 0.25 * step)
    _feed(watch, 4.25, stderr, received + 5)
    assert watch.stalled(4.25) and watch.quiet_s(4.25) == 3.0
    assert watch.server_line == "Counting objects:   1% (1999/100000)"


def test_a_slow_server_that_counts_on_is_not_stalled() -> None:
    """A CPU-starved server: one object counted every 2 s over a 3 s stall timeout."""
    watch = PackPhaseWatch(stall_timeout_s=3.0)
    stderr = ADVERTISED
    for i in range(1, 80):
        t = 0.25 * i
        if i % 8 == 0:
            stderr += f"remote: Counting objects:  {i // 8}% ({i // 8}/100)        \r"
        _feed(watch, t, stderr, 1014 + 60 * i)
        assert not watch.stalled(t), t


def test_bytes_beyond_the_servers_words_are_news_and_keepalives_are_not() -> None:
    """The ref advertisement (or a pack git does not count aloud) moves the clone; a
    keepalive's few bytes do not; without a stall timeout nothing stalls."""
    watch = PackPhaseWatch(stall_timeout_s=1.0)
    _feed(watch, 0.25, ADVERTISED, 10)
    _feed(watch, 0.5, ADVERTISED, 10 + NEWS_BYTES)
    assert watch.last_news_s == 0.5
    _feed(watch, 0.75, ADVERTISED, 10 + NEWS_BYTES + 60)
    assert watch.last_news_s == 0.5 and watch.stalled(1.5)
    assert not PackPhaseWatch(stall_timeout_s=None).stalled(1e6)
