"""ungate (kai's): pods of a queue that opted in are created held at the queue-admission gate (the simulator's
admission does what kai's webhook does) and lose it as soon as their queue admits them, so an autoscaler never sees
a pod its queue would not let run."""

from typing import Any

from sim_support import gpu_pod, node, phases, queue, simulation, step

from kai.core.actions import ungate
from kai.core.framework.config import DEFAULT_ACTIONS
from kai.core.model import names
from kai.core.state.reasons import ReasonKind

GATING = {names.QUEUE_ADMISSION_GATING_ANNOTATION: "true"}
ACTIONS = {"actions": ", ".join((*DEFAULT_ACTIONS, ungate.NAME))}


def gated(sim: Any) -> list[str]:
    return sorted(p["metadata"]["name"] for p in sim.cluster.list("Pod") if p["spec"].get("schedulingGates"))


def test_pods_over_the_queue_limit_stay_gated_and_lose_the_gate_once_the_queue_admits_them() -> None:
    sim = simulation(
        [queue("team", 0, 2, **GATING), node("n1", 8), *(gpu_pod(f"p{i}", "team") for i in range(4))], ACTIONS
    )
    assert gated(sim) == ["p0", "p1", "p2", "p3"]  # created gated
    first = step(sim)
    assert first.session.result.ungated == ["ns/p0", "ns/p1"]
    assert gated(sim) == ["p2", "p3"]
    held = first.session.jobs["ns/pg-p2-uid-p2"]
    [reason] = [e.why for e in held.fit_errors if e.reason == "QueueAdmission"]
    assert reason is not None and reason.kind is ReasonKind.QUEUE_ADMISSION
    assert reason.children[0].kind is ReasonKind.QUEUE_LIMIT
    step(sim)
    assert phases(sim) == {"p0": "Running", "p1": "Running", "p2": "Pending", "p3": "Pending"}
    ungated = sim.cluster.get("Pod", "ns/p0")
    assert ungated is not None and names.QUEUE_ADMITTED_ANNOTATION in ungated["metadata"]["annotations"]
    done = sim.cluster.get("Pod", "ns/p0")
    assert done is not None
    done["status"]["phase"] = "Succeeded"
    sim.cluster.update_status("Pod", done)
    assert step(sim).session.result.ungated == ["ns/p2"]


def test_an_ungated_pod_that_still_waits_holds_its_queue_quota_until_its_reservation_ends() -> None:
    """Two GPUs of limit, a 1-GPU node: the second ungated pod cannot be placed, and keeps the fourth gated."""
    pods = [gpu_pod(f"p{i}", "team") for i in range(3)]
    config = {**ACTIONS, "disruption": {"queueAdmissionReservation": "30s"}}
    sim = simulation([queue("team", 0, 2, **GATING), node("n1", 1), *pods], config)
    assert step(sim).session.result.ungated == ["ns/p0", "ns/p1"]
    for _ in range(3):
        assert step(sim).session.result.ungated == []  # p1 waits for room, reserving the limit's second GPU
    assert step(sim).session.result.ungated == ["ns/p2"]  # 40s on: p1's reservation ended


def test_a_pod_gated_for_a_queue_that_does_not_opt_in_is_ungated_at_once() -> None:
    pod = gpu_pod("p", "team")
    pod["spec"]["schedulingGates"] = [{"name": names.QUEUE_ADMISSION_GATE}]
    sim = simulation([queue("team", 0, 0), node("n1", 1), pod], ACTIONS)
    assert step(sim).session.result.ungated == ["ns/p"]


def test_another_gate_is_its_owners_business() -> None:
    pod = gpu_pod("p", "team")
    pod["spec"]["schedulingGates"] = [{"name": names.QUEUE_ADMISSION_GATE}, {"name": "example.com/other"}]
    sim = simulation([queue("team", **GATING), node("n1", 1), pod], ACTIONS)
    assert step(sim).session.result.ungated == []


def test_a_gang_is_ungated_whole_or_not_at_all() -> None:
    podgroup = {
        "apiVersion": "scheduling.run.ai/v2alpha2",
        "kind": "PodGroup",
        "metadata": {"name": "gang", "namespace": "ns"},
        "spec": {"queue": "team", "minMember": 3},
    }
    pods = [gpu_pod(f"g{i}", "team") for i in range(3)]
    for pod in pods:
        pod["metadata"]["annotations"] = {"pod-group-name": "gang"}
    sim = simulation([queue("team", 0, 2, **GATING), node("n1", 8), podgroup, *pods], ACTIONS)
    assert step(sim).session.result.ungated == []
    assert gated(sim) == ["g0", "g1", "g2"]


def test_gated_demand_counts_in_the_queues_request_as_pending_demand_does() -> None:
    objects = [queue("team", 0, 2, **GATING), node("n1", 8), *(gpu_pod(f"p{i}", "team") for i in range(4))]
    with_gates = simulation(objects, ACTIONS).cycle(1).session
    without = simulation(objects).cycle(1).session
    assert with_gates.queue_share_fns[0]("team")["request"] == without.queue_share_fns[0]("team")["request"]
