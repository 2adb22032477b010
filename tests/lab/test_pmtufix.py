"""``lab fix`` of the shared fetch faults that had none (issue 44 item 3): the path-MTU black
holes (the router's MSS clamp, the narrow link kept) and sshd's MaxStartups (the fix's
``100:30:300``). Pure: the fixed specs, the router rules they give, what restarts, what
``lab fix`` says, and the spec rebuilt from a fixed lab's state."""

from __future__ import annotations

from dataclasses import replace

import pytest

from gitnetdiag.lab import fix, pmtufix
from gitnetdiag.lab.spec import (
    FAULT_FIX_NAMES,
    FAULT_FIXED_SETTINGS,
    FETCH_FAULT_CULPRIT,
    FETCH_SHARED_FAULT_CULPRIT,
    FIXED_MAX_STARTUPS,
    PMTU_BLACKHOLE_BYTES,
    SMALL_MAX_STARTUPS,
    build_spec,
    fixed_spec,
)

NOT_A_MISCONFIGURATION = {"bandwidth-limit"}
"""The shared fetch fault whose culprit names no setting to change (a slower path)."""


def test_every_fetch_fault_with_a_fix_to_apply_has_one() -> None:
    fetch_faults = set(FETCH_FAULT_CULPRIT) | set(FETCH_SHARED_FAULT_CULPRIT)
    assert fetch_faults - set(FAULT_FIXED_SETTINGS) == NOT_A_MISCONFIGURATION
    assert FAULT_FIX_NAMES["bandwidth-limit"] == "Not a misconfiguration"


@pytest.mark.parametrize(("fault", "side"), [("pmtu-blackhole", "-d"),
                                             ("pmtu-blackhole-client", "-s")])
def test_a_fixed_black_hole_stays_and_the_syns_are_clamped(fault: str, side: str) -> None:
    spec = build_spec(instance="a", faults=[fault])
    drop = ("-p", "tcp", side, "198.18.2.2", "-m", "length", "--length", "1200:65535",
            "-j", "DROP")
    assert pmtufix.forward_rules(spec) == [drop] and pmtufix.mangle_rules(spec) == []
    after = fixed_spec(spec)
    assert after.faults == ("healthy",) and after.fixed == (fault,)
    assert pmtufix.forward_rules(after) == [drop]  # the narrow link is still there
    assert pmtufix.mangle_rules(after) == [("-p", "tcp", "--tcp-flags", "SYN,RST", "SYN", "-j",
                                            "TCPMSS", "--set-mss", "1159")]
    assert pmtufix.fixed_now(spec, after) == [fault] and pmtufix.fixed_now(after, after) == []
    notes = pmtufix.fix_notes(spec, after)
    assert len(notes) == 1 and "1159 B" in notes[0] and "1199 B MTU" in notes[0], notes
    assert fix._roles_to_restart(spec, after) == ()
    # the spec rebuilt from the fixed lab's state keeps both rules
    rebuilt = replace(build_spec(instance="a", faults=["healthy"]), fixed=(fault,))
    assert pmtufix.forward_rules(rebuilt) == [drop] and pmtufix.mangle_rules(rebuilt)


def test_the_clamp_fits_the_narrow_link() -> None:
    """A full segment at the clamped MSS (20 B IPv4 + 20 B TCP + MSS) is one byte under the
    length the router drops from; with timestamps (12 B of options out of the MSS) too."""
    assert pmtufix.BLACKHOLE_BYTES == PMTU_BLACKHOLE_BYTES
    assert 20 + 20 + pmtufix.MSS_CLAMP_BYTES == PMTU_BLACKHOLE_BYTES - 1
    assert 20 + 32 + (pmtufix.MSS_CLAMP_BYTES - 12) < PMTU_BLACKHOLE_BYTES


def test_maxstartups_raised_to_the_fix_s_example_and_sshd_restarted() -> None:
    spec = build_spec(instance="a", faults=["ssh-maxstartups"])
    after = fixed_spec(spec)
    assert spec.sshd_max_startups == SMALL_MAX_STARTUPS
    assert after.sshd_max_startups == FIXED_MAX_STARTUPS == "100:30:300"
    assert fix._roles_to_restart(spec, after) == ("sshd",)
