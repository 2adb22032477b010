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
    assert watch.last_news_s == 0.0 and not watch.stalled(1.5)  # held by the next sample?
    _feed(watch, 0.75, ADVERTISED, 10 + NEWS_BYTES + 60)
    assert watch.last_news_s == 0.5 and watch.last_bytes_s == 0.5  # yes: news since 0.5
    _feed(watch, 1.0, ADVERTISED, 10 + NEWS_BYTES + 65)
    assert watch.stalled(1.5)
    assert not PackPhaseWatch(stall_timeout_s=None).stalled(1e6)


def test_git_s_lag_behind_the_kernel_is_no_bytes_beyond_the_words() -> None:
    """A busy machine: the kernel counted a progress line's 452 B before git wrote it (its
    stderr 106 B longer), the next sample's stderr caught up. That is git's lag, not a pack:
    the words-only bound still comes (before: the rise reset it, and a CPU-starved git://
    clone waited 23 s for its pack past the 15 s bound)."""
    watch = PackPhaseWatch(stall_timeout_s=10.0, words_limit_s=15.0)
    stderr, received = ADVERTISED + "remote: Enumerating objects: 2004, done.\n", 3412
    t, n, lagged = 0.25, 0, ""
    _feed(watch, t, stderr, received)
    while t < 16.0:
        t += 0.5
        n += 1
        line = f"remote: Counting objects: {n}% ({n}/2004)        \r"
        received += len(line) - 12  # on the wire: no "remote: " nor padding, a pkt header
        if n == 20:  # the kernel has the line and 400 B more of them, git wrote none yet
            lagged, received = line, received + 400
            _feed(watch, t, stderr, received)
            assert not watch.stalled(t)  # to be held by the next sample
            continue
        stderr += lagged + line + "x" * (400 if lagged else 0)
        lagged = ""
        _feed(watch, t, stderr, received)
    # the ref advertisement at 0.25 s was the last bytes beyond the words
    assert watch.last_bytes_s == 0.25 and watch.words_only(t) and watch.stalled(t)
