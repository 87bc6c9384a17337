"""The numa plugin: its hooks on a bare session, each Topology Manager policy, the zones' accounting through
statements, and a placement carried from a BindRequest to the pod and back into the next cycle's accounting."""

import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from core_builders import T0, cluster, podgroup, queue
from core_builders import numa_topology as nrt

from kai.components.sim.runner import Simulation
from kai.components.sim.scenario import load_scenario
from kai.core.framework.config import SchedulerConfig
from kai.core.framework.session import Session
from kai.core.framework.statement import Statement
from kai.core.plugins.numa.plugin import NOT_ALIGNED, NumaPlugin
from kai.core.state.snapshot import take_snapshot


def node(name: str, gpus: int = 0) -> dict[str, Any]:
    allocatable = {"cpu": "64", "memory": "256Gi", "nvidia.com/gpu": str(gpus), "pods": "110"}
    return {"metadata": {"name": name}, "status": {"allocatable": allocatable}}


def pod(name: str, cpu: str = "3", gpus: int = 0, qos: str = "Guaranteed", **extra: Any) -> dict[str, Any]:
    requests = {"cpu": cpu, "memory": "1Gi", "nvidia.com/gpu": str(gpus)}
    spec = {"schedulerName": "kai-scheduler", "containers": [{"name": "c", "resources": {"requests": requests}}]}
    meta = {"name": name, "namespace": "default", "annotations": {"pod-group-name": name}}
    status = {"phase": "Pending", "qosClass": qos}
    if "node_name" in extra:
        spec["nodeName"] = extra.pop("node_name")
        status["phase"] = "Running"
    if "observed" in extra:
        record = [{"zone": z, "amount": {"cpu": c}} for z, c in extra.pop("observed").items()]
        meta["annotations"]["kai.scheduler/numa-placement-observed"] = json.dumps(record)
    spec.update(extra)
    return {"metadata": meta, "spec": spec, "status": status}


TWO_FOURS = {"node-0": {"cpu": "4"}, "node-1": {"cpu": "4"}}


def session(*objects: tuple[str, dict[str, Any]], **arguments: Any) -> tuple[Session, NumaPlugin]:
    objects = (("Queue", queue("q")), *objects)
    for kind, raw in list(objects):
        if kind == "Pod":
            objects += (("PodGroup", podgroup(raw["metadata"]["name"], "q", T0)),)
    ssn = Session(take_snapshot(cluster(*objects), "kai-scheduler", T0), SchedulerConfig(), T0)
    plugin = NumaPlugin(arguments)
    plugin.on_session_open(ssn)
    return ssn, plugin


def task_of(ssn: Session, name: str) -> Any:
    return ssn.jobs[f"default/{name}"].tasks[f"default/{name}"]


# ------------------------------------------------------------------------------------------- the hooks


def test_the_plugin_adds_a_predicate_a_score_a_placement_and_the_zone_accounting_and_nothing_else():
    ssn, plugin = session(("Node", node("n1")), ("NodeResourceTopology", nrt("n1", "single-numa-node", TWO_FOURS)))
    assert ssn.predicates == [plugin.predicate] and ssn.node_order_fns == [plugin.score]
    assert ssn.numa_placement_fn == plugin.placement
    assert ssn.allocate_handlers == [plugin.charge] and ssn.deallocate_handlers == [plugin.credit]
    assert not ssn.job_order_keys and not ssn.node_filters and not ssn.pre_predicates
    assert ssn.result.numa["n1"].available_by_zone() == {"node-0": {"cpu": 4000.0}, "node-1": {"cpu": 4000.0}}


@pytest.mark.parametrize(
    ("policy", "cpu", "refused", "zones"),
    [
        ("single-numa-node", "3", False, ["node-0"]),
        ("single-numa-node", "6", True, None),
        ("restricted", "6", False, ["node-0", "node-1"]),
        ("restricted", "9", True, None),
        ("best-effort", "6", False, ["node-0", "node-1"]),
        ("best-effort", "9", False, []),  # never refuses (the kubelet admits it anyway); no zones hold it
        ("none", "9", False, []),  # not NUMA-managed: no zones are accounted
    ],
)
def test_each_policy_refuses_what_its_kubelet_would_and_predicts_the_zones(policy, cpu, refused, zones):
    ssn, plugin = session(
        ("Node", node("n1")), ("NodeResourceTopology", nrt("n1", policy, TWO_FOURS)), ("Pod", pod("p", cpu))
    )
    task, info = task_of(ssn, "p"), ssn.nodes.by_name["n1"]
    assert plugin.predicate(task, ssn.jobs["default/p"], info) == (NOT_ALIGNED if refused else None)
    if not refused:
        assert [zone.zone for zone in plugin.placement(task, info) or ()] == zones


def test_restricted_refuses_resources_whose_preferred_widths_differ():
    """cpu fits one zone's allocatable but the 2 GPUs need two: the kubelet's merged hint is not preferred."""
    zones = {"node-0": {"cpu": "8", "nvidia.com/gpu": "1"}, "node-1": {"cpu": "8", "nvidia.com/gpu": "1"}}
    ssn, plugin = session(
        ("Node", node("n1", 2)),
        ("NodeResourceTopology", nrt("n1", "restricted", zones)),
        ("Pod", pod("p", "4", gpus=2)),
    )
    assert plugin.predicate(task_of(ssn, "p"), ssn.jobs["default/p"], ssn.nodes.by_name["n1"]) == NOT_ALIGNED


def test_cpu_and_memory_align_only_for_guaranteed_pods_but_devices_for_any_pod():
    zones = {"node-0": {"cpu": "4", "nvidia.com/gpu": "1"}, "node-1": {"cpu": "4", "nvidia.com/gpu": "1"}}
    ssn, plugin = session(
        ("Node", node("n1", 2)),
        ("NodeResourceTopology", nrt("n1", "single-numa-node", zones)),
        ("Pod", pod("burstable-cpu", "6", qos="Burstable")),
        ("Pod", pod("burstable-gpus", "1", gpus=2, qos="Burstable")),
    )
    info, job = ssn.nodes.by_name["n1"], ssn.jobs
    assert plugin.predicate(task_of(ssn, "burstable-cpu"), job["default/burstable-cpu"], info) is None
    assert plugin.predicate(task_of(ssn, "burstable-gpus"), job["default/burstable-gpus"], info) == NOT_ALIGNED
    ignoring, plugin = session(
        ("Node", node("n1", 2)),
        ("NodeResourceTopology", nrt("n1", "single-numa-node", zones)),
        ("Pod", pod("burstable-gpus", "1", gpus=2, qos="Burstable")),
        ignoreList="nvidia.com/gpu",
    )
    task, info = task_of(ignoring, "burstable-gpus"), ignoring.nodes.by_name["n1"]
    assert plugin.predicate(task, ignoring.jobs["default/burstable-gpus"], info) is None


def test_container_scope_aligns_each_container_and_pins_only_whole_cpus():
    """Two 3-cpu containers fit one 4-cpu zone each (container scope), not together (pod scope); a fractional cpu
    stays in the shared pool; an init container is aligned alone and never added up."""
    containers = [
        {"name": f"c{i}", "resources": {"requests": {"cpu": cpu, "memory": "1Gi"}}} for i, cpu in enumerate(("3", "3"))
    ]
    init = [{"name": "init", "resources": {"requests": {"cpu": "4", "memory": "1Gi"}}}]
    shaped = pod("p", containers=containers, initContainers=init)
    for scope, refused in (("container", None), ("pod", NOT_ALIGNED)):
        topology = nrt("n1", "single-numa-node", TWO_FOURS, scope=scope)
        ssn, plugin = session(("Node", node("n1")), ("NodeResourceTopology", topology), ("Pod", shaped))
        assert plugin.predicate(task_of(ssn, "p"), ssn.jobs["default/p"], ssn.nodes.by_name["n1"]) == refused
    fractional = pod("f", "4500m")
    ssn, plugin = session(
        ("Node", node("n1")), ("NodeResourceTopology", nrt("n1", "single-numa-node", TWO_FOURS)), ("Pod", fractional)
    )
    assert plugin.predicate(task_of(ssn, "f"), ssn.jobs["default/f"], ssn.nodes.by_name["n1"]) is None


def test_nodes_score_by_the_zones_the_pod_would_span():
    ssn, plugin = session(
        ("Node", node("one-zone")),
        ("Node", node("two-zones")),
        ("Node", node("no-topology")),
        ("NodeResourceTopology", nrt("one-zone", "best-effort", {"node-0": {"cpu": "8"}, "node-1": {"cpu": "8"}})),
        ("NodeResourceTopology", nrt("two-zones", "best-effort", TWO_FOURS)),
        ("Pod", pod("p", "6")),
    )
    scores = plugin.score(task_of(ssn, "p"), ssn.nodes.ready | True)
    by_name = {info.name: float(scores[info.column]) for info in ssn.nodes.infos}
    assert by_name == {"one-zone": 100.0, "two-zones": 50.0, "no-topology": 50.0}  # assumed the widest span
    burstable = pod("b", "6", qos="Burstable")
    ssn, plugin = session(
        ("Node", node("n1")), ("NodeResourceTopology", nrt("n1", "best-effort", TWO_FOURS)), ("Pod", burstable)
    )
    assert not plugin.score(task_of(ssn, "b"), ssn.nodes.ready | True).any()


# ------------------------------------------------------------------------------------------- the zones' accounting


def test_running_pods_are_charged_from_their_records_and_evictions_credit_them_until_rolled_back():
    ssn, plugin = session(
        ("Node", node("n1")),
        ("NodeResourceTopology", nrt("n1", "single-numa-node", TWO_FOURS)),
        ("Pod", pod("a", node_name="n1", observed={"node-0": "3"})),
        ("Pod", pod("b", node_name="n1", observed={"node-1": "3"})),
        ("Pod", pod("waiting", "3")),
    )
    ledger = ssn.result.numa["n1"]
    assert ledger.available_by_zone() == {"node-0": {"cpu": 1000.0}, "node-1": {"cpu": 1000.0}}
    stmt = Statement(ssn)
    checkpoint = stmt.checkpoint()
    stmt.evict(task_of(ssn, "a"), "freeing node-0")
    assert ledger.available_by_zone()["node-0"] == {"cpu": 4000.0}
    waiting, info = task_of(ssn, "waiting"), ssn.nodes.by_name["n1"]
    assert plugin.predicate(waiting, ssn.jobs["default/waiting"], info) is None
    waiting.numa_placement = plugin.placement(waiting, info)
    stmt.pipeline(waiting, "n1")
    assert [z.zone for z in waiting.numa_placement] == ["node-0"]
    assert ledger.available_by_zone()["node-0"] == {"cpu": 1000.0}
    stmt.rollback(checkpoint)
    assert ledger.available_by_zone() == {"node-0": {"cpu": 1000.0}, "node-1": {"cpu": 1000.0}}
    assert [z.zone for z in task_of(ssn, "a").numa_placement] == ["node-0"]


def test_without_reconstruction_the_reported_availability_is_used_as_it_is():
    reported = nrt("n1", "single-numa-node", TWO_FOURS)
    reported["zones"][0]["resources"][0]["available"] = "2"
    objects = (
        ("Node", node("n1")),
        ("NodeResourceTopology", reported),
        ("Pod", pod("a", node_name="n1", observed={"node-1": "3"})),
    )
    ssn, _ = session(*objects, reconstructAvailable="false")
    assert ssn.result.numa["n1"].available_by_zone() == {"node-0": {"cpu": 2000.0}, "node-1": {"cpu": 4000.0}}
    ssn, _ = session(*objects)
    assert ssn.result.numa["n1"].available_by_zone() == {"node-0": {"cpu": 4000.0}, "node-1": {"cpu": 1000.0}}


def test_a_prediction_reaches_the_pod_through_its_bind_request_and_is_charged_next_cycle(tmp_path: Path):
    """Cycle 1 places a Guaranteed pod on node-0: its BindRequest carries the zones, the binder puts them on the
    pod; cycle 2 charges them, so the next pod goes to node-1 and a third waits."""
    objects = [
        {"apiVersion": "v1", "kind": "Node", **node("n1")},
        {
            "apiVersion": "topology.node.k8s.io/v1alpha2",
            "kind": "NodeResourceTopology",
            **nrt("n1", "single-numa-node", TWO_FOURS),
        },
        {"apiVersion": "scheduling.run.ai/v2", "kind": "Queue", **queue("q")},
        {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": "train"}, "value": 50},
    ]
    for name, created in (("first", T0 - 60), ("second", T0)):
        objects.append({"apiVersion": "scheduling.run.ai/v2alpha2", "kind": "PodGroup", **podgroup(name, "q", created)})
        objects.append({"apiVersion": "v1", "kind": "Pod", **pod(name)})
    path = tmp_path / "numa.yaml"
    config = {"actions": "allocate", "tiers": [{"plugins": [{"name": "proportion"}, {"name": "numa"}]}]}
    path.write_text(
        yaml.safe_dump({"name": "numa", "config": config, "now": "2025-01-01T00:00:00Z", "objects": objects})
    )
    sim = Simulation(load_scenario(path))
    sim.advance(sim.cycle(1))
    bind_request = sim.cluster.get("BindRequest", "default/first")
    bound = sim.cluster.get("Pod", "default/first")
    assert bind_request is not None and bound is not None
    assert bind_request["spec"]["predictedNUMAZones"] == [{"zone": "node-0", "amount": {"cpu": "3"}}]
    predicted = json.loads(bound["metadata"]["annotations"]["kai.scheduler/numa-placement-predicted"])
    assert predicted == [{"zone": "node-0", "amount": {"cpu": "3"}}]
    second = sim.cycle(2)
    assert second.outcome.pods["default/second"]["numaZones"] == ["node-1"]
    assert second.outcome.nodes["n1"]["numaZonesAvailable"] == {"node-0": {"cpu": 1000.0}, "node-1": {"cpu": 1000.0}}
