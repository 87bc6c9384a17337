"""Every fix ``kai explain`` prints starts its podgroup: whatever the cluster (``waiting_clusters``), each proven
fix of each waiting podgroup, written as the change file ``-o json`` gives and run as ``kai simulate --what-if``
runs it (the file read, the changes applied, the what-if's simulation), places the podgroup's whole gang within
the cycles the fix names; and a podgroup that is not waiting gets no fix."""

from pathlib import Path
from typing import Any

import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from waiting_clusters import NOW, cluster

from kai.components.insight.explain import explain_podgroup
from kai.components.insight.fixes.found import Budget
from kai.components.insight.fixes.search import FixFinder
from kai.components.insight.inspect import inspect
from kai.components.sim.scenario import load_scenario
from kai.components.sim.whatif.apply import apply_changes
from kai.components.sim.whatif.changes import read_changes
from kai.components.sim.whatif.compare import Assumptions, what_if_simulation
from kai.core.state.pod_status import ACTIVE_ALLOCATED

BUDGET = Budget(seconds=60, candidates=6)


@st.composite
def clusters(draw: st.DrawFn) -> list[dict[str, Any]]:
    return cluster(lambda options: draw(st.sampled_from(list(options))))


@given(objects=clusters())
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
def test_every_fix_explain_prints_starts_the_podgroup_in_a_what_if(
    objects: list[dict[str, Any]], tmp_path_factory: Any
) -> None:
    folder = tmp_path_factory.mktemp("fixes")
    path = folder / "cluster.yaml"
    path.write_text(yaml.safe_dump({"name": "drawn", "now": NOW, "objects": objects}))
    ins = inspect(load_scenario(path))
    finder = FixFinder(ins, BUDGET, clock=lambda: 0.0)
    for key in sorted(ins.session.jobs):
        told = explain_podgroup(ins, key, prove=finder.search)
        if told["state"] != "waiting":
            assert told["fixes"] is None
            continue
        for number, fix in enumerate(told["fixes"]["proven"]):
            change = folder / f"fix-{number}.yaml"
            change.write_text(yaml.safe_dump(fix["changes"]))
            assert _starts(path, change, key, told["minMember"], told["fixes"]["cycles"]), (key, fix["text"])


def _starts(path: Path, change: Path, key: str, gang: int, cycles: int) -> bool:
    """A cycle of the what-if's changed run places pods of the podgroup, which then holds its whole gang."""
    scenario = load_scenario(path)
    sim = what_if_simulation(apply_changes(scenario, read_changes(change)), Assumptions.defaults(scenario, cycles))
    for number in range(1, cycles + 1):
        record = sim.cycle(number)
        result, job = record.session.result, record.session.jobs.get(key)
        placed = {bind.pod_key for bind in result.binds} | {pipelined.pod_key for pipelined in result.pipelined}
        if job is not None and placed & set(job.tasks):
            held = sum(1 for task in job.tasks.values() if task.status in ACTIVE_ALLOCATED)
            if held >= gang:
                return True
        sim.advance(record)
    return False
