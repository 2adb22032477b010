"""The storage check feeds the diagnosis engine's slow-storage culprit."""

from __future__ import annotations

from dataclasses import replace

from gitnetdiag.commands.storage import storage_findings
from gitnetdiag.diagnosis.engine import diagnose
from gitnetdiag.diagnosis.observations import Observations, Trace2Phases
from gitnetdiag.model.storage.reference import SLOW_IOPS
from gitnetdiag.storage.adapter import storage_observation_from_result, storage_only_observations
from tests.diagnosis import examples
from tests.storage.fakes import check_from
from tests.storage.helpers import CRAFTED_SLOW, REAL_DIRECT


def test_adapter_fields() -> None:
    obs = storage_observation_from_result(check_from(CRAFTED_SLOW, path="/srv/git"))
    assert (obs.read_iops, obs.write_iops) == (450.0, 150.0)
    assert obs.reference_iops == SLOW_IOPS
    assert obs.path == "/srv/git"


def test_no_fio_gives_no_iops() -> None:
    obs = storage_observation_from_result(check_from(REAL_DIRECT, with_fio=False))
    assert obs.read_iops is None and obs.write_iops is None


def test_crafted_slow_volume_gives_slow_storage() -> None:
    findings = storage_findings(check_from(CRAFTED_SLOW))
    assert [f.id for f in findings] == ["slow-storage"]
    assert "150 IOPS, below the 1000 reference" in findings[0].summary
    assert findings[0].score > 0.5


def test_crafted_slow_volume_through_the_engine_with_default_thresholds() -> None:
    """Alone it costs no measured push time, so the engine drops it below MIN_IMPACT_S ..."""
    alone = diagnose(storage_only_observations(check_from(CRAFTED_SLOW)))
    assert [f.id for f in alone.dropped] == ["slow-storage"]
    assert alone.findings == ()


def test_slow_storage_ranks_with_a_slow_server_answer() -> None:
    """... next to pushes whose server answered late, it is kept and ranked with the rest."""
    base = examples.healthy()
    protocols = {
        name: replace(p, trace2=replace(p.trace2 or Trace2Phases(), server_wait_s=4.0))
        for name, p in base.protocols.items()
    }
    obs = Observations(
        run=base.run,
        protocols=protocols,
        storage=storage_observation_from_result(check_from(CRAFTED_SLOW)),
    )
    d = diagnose(obs)
    ids = [f.id for f in d.findings]
    assert "slow-storage" in ids
    finding = d.findings[ids.index("slow-storage")]
    assert finding.cost_s > 3.0
    assert d.verdict == "degraded"


def test_this_machines_disk_gives_nothing() -> None:
    assert storage_findings(check_from(REAL_DIRECT)) == ()
    d = diagnose(storage_only_observations(check_from(REAL_DIRECT)))
    assert d.findings == () and d.dropped == ()
