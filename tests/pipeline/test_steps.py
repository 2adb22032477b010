"""The pipeline's steps: results returned with their notes, and the rules written once."""

from __future__ import annotations

import ast
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np

from gitnetdiag.analysis.window import forward_filled
from gitnetdiag.diagnosis import observations as obs
from gitnetdiag.pipeline._connections import analysis_order, count_by_kind, handshake_tally
from gitnetdiag.pipeline._noted import Noted, Notes

PIPELINE = Path(__file__).resolve().parents[2] / "gitnetdiag" / "pipeline"


FILLED = ("list[str]", "list[obs.RunProblem]", "list[RunProblem]")
"""Parameter types of the lists steps used to be handed to fill (warnings, unread)."""


def test_no_pipeline_step_takes_a_list_to_fill() -> None:
    """A step returns its notes (``Noted``); none takes ``warnings: list[str]`` or a list
    of problems to append to."""
    found = []
    for path in sorted(PIPELINE.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                arguments = [*node.args.posonlyargs, *node.args.args, *node.args.kwonlyargs]
                found += [f"{path.name}:{node.name}({a.arg})" for a in arguments
                          if a.arg in ("warnings", "notes", "unread", "problems")
                          or (a.annotation is not None
                              and ast.unparse(a.annotation).replace(" ", "") in FILLED)]
    assert found == []


def test_notes_gather_values_notes_and_problems_in_order() -> None:
    problem = obs.RunProblem(stage="capture", reference="truncated", message="h2-1.pcap: cut")
    gathered = Notes()
    assert gathered.take(Noted(value=1, notes=("a",))) == 1
    assert gathered.take(Noted(value=None, notes=("b", "c"), problems=(problem,))) is None
    assert gathered.take(Noted(value="x")) == "x"
    assert gathered.notes == ["a", "b", "c"] and gathered.problems == [problem]


def test_the_window_carries_forward_and_back_to_the_first_advertisement() -> None:
    window = np.array([-1, 5, -1, -1, 7, -1], dtype=np.float64)
    filled = forward_filled(window)
    assert filled is not None and filled.tolist() == [5, 5, 5, 5, 7, 7]
    assert window.tolist() == [-1, 5, -1, -1, 7, -1]  # the input is left alone
    assert forward_filled(np.array([-1.0, -1.0])) is None
    assert forward_filled(np.array([], dtype=np.float64)) is None
    zero = forward_filled(np.array([0.0, -1.0, 3.0]))
    assert zero is not None and zero.tolist() == [0, 0, 3]  # a zero window is a window


def _conn(syn: int, synack: int, after_ack: int, resets: tuple[int, int]) -> Any:
    return SimpleNamespace(
        handshake=SimpleNamespace(syn_retransmissions=syn, synack_retransmissions=synack,
                                  synack_after_ack=after_ack),
        a_to_b=SimpleNamespace(resets_sent=resets[0]),
        b_to_a=SimpleNamespace(resets_sent=resets[1]))


def test_a_burst_tally_sums_each_connections_handshake_trouble() -> None:
    """A SYN-ACK seen after the client's ACK counts when it outnumbers the retransmitted
    ones (the server's accept queue was full), never both."""
    tally = handshake_tally([_conn(1, 0, 2, (0, 1)), _conn(0, 3, 1, (1, 1)),
                             _conn(0, 0, 0, (0, 0))])
    assert (tally.syn_retransmissions, tally.synack_retransmissions, tally.resets) == (1, 5, 3)
    assert handshake_tally([]).resets == 0


def test_failures_are_counted_by_kind_in_the_order_they_came() -> None:
    assert list(count_by_kind(["hung", "reset", "hung"]).items()) == [("hung", 2), ("reset", 1)]
    assert count_by_kind([]) == {}


def test_the_analysed_push_is_the_slowest_measured_one_then_the_failed() -> None:
    pushes: list[Any] = [SimpleNamespace(outcome=o, wall_s=w, repeat=i) for i, (o, w) in
                         enumerate([("ok", 3.0), ("reset", 40.0), ("bounded", 5.0),
                                    ("ok", 4.0), ("hung", 60.0)], start=1)]
    assert [p.repeat for p in analysis_order(pushes)] == [3, 4, 1, 5, 2]
