"""Typed reasons and the nearest fix, one test per reason kind: each builds a cluster where a podgroup waits for
that reason, runs a cycle of the real core, and checks the typed reason (kind and evidence), its nearest fix and the
words kai shows for them. KAI's own texts beside them are unchanged (the conformance suite checks those)."""

from typing import Any

from core_builders import T0, cluster, node, pod, podgroup, queue

from kai.core.config import parse_config
from kai.core.cycle import run_cycle
from kai.core.framework.config import SchedulerConfig
from kai.core.framework.decisions import Unschedulable
from kai.core.model.meta import format_time
from kai.core.state.cluster_state import ClusterState
from kai.core.state.reason_text import describe, describe_fix
from kai.core.state.reasons import (
    SEVERITY,
    Fix,
    FixKind,
    Reason,
    ReasonKind,
    invalid_object,
    nearest_fix,
    pipelined,
)
from kai.core.state.snapshot import take_snapshot

ROOT = ("Queue", queue("root"))
ALLOCATE = parse_config({"actions": "allocate"})
"""For placements consolidation would otherwise rearrange."""


def waiting(state: ClusterState, key: str, config: SchedulerConfig | None = None, now: float = T0) -> Unschedulable:
    config = config or parse_config({})
    session = run_cycle(take_snapshot(state, config.scheduler_name, now), config, now)
    return session.result.unschedulable[key]


def fix_text(waits: Unschedulable, now: float = T0) -> str:
    fix = waits.nearest_fix
    assert fix is not None
    return describe_fix(fix, now)


def limited(name: str, gpu_limit: float, **spec: Any) -> dict[str, Any]:
    raw = queue(name, parent="root", **spec)
    raw["spec"]["resources"]["gpu"]["limit"] = gpu_limit
    return raw


def running(name: str, queue_name: str, gpus: int, node_name: str, started: float = T0 - 60) -> list[tuple[str, Any]]:
    started_at = {"kai.scheduler/last-start-timestamp": format_time(started)}
    return [
        ("PodGroup", podgroup(name, queue_name, started - 60, minMember=1, annotations=started_at)),
        ("Pod", pod(f"{name}-0", name, gpus=gpus, node_name=node_name)),
    ]


def gang(name: str, queue_name: str, size: int, gpus: int = 1, **spec: Any) -> list[tuple[str, Any]]:
    objects: list[tuple[str, Any]] = [("PodGroup", podgroup(name, queue_name, T0, minMember=size, **spec))]
    return objects + [("Pod", pod(f"{name}-{i}", name, gpus=gpus)) for i in range(size)]


def test_queue_limit_names_the_queue_its_numbers_and_the_raise_that_lets_it_start() -> None:
    state = cluster(
        ROOT, ("Queue", limited("q", 4)), ("Node", node("n0", 8)), *running("r", "q", 2, "n0"), *gang("g", "q", 2, 2)
    )
    waits = waiting(state, "default/g")
    assert waits.reason == "OverLimit"
    (reason,) = waits.reasons
    assert reason.kind is ReasonKind.QUEUE_LIMIT
    assert reason.evidence == {
        "queue": "q",
        "resource": "GPU",
        "unit": "GPUs",
        "bound": 4,
        "allocated": 2,
        "requested": 4,
    }
    assert waits.nearest_fix == Fix(
        FixKind.RAISE_QUEUE_LIMIT, {"queue": "q", "resource": "GPU", "unit": "GPUs", "by": 2, "to": 6}
    )
    assert fix_text(waits) == "raise the GPU limit of queue q by 2 GPUs (to 6)"
    assert describe(reason) == "queue q would exceed its GPU limit: limit 4 GPUs, 2 allocated, 4 requested"


def test_non_preemptible_over_quota_offers_the_quota_raise_then_preemptibility() -> None:
    state = cluster(
        ROOT,
        ("Queue", queue("q", parent="root", gpu_quota=2)),
        ("Node", node("n0", 8)),
        *gang("g", "q", 1, 3, priority_class="build"),
    )
    waits = waiting(state, "default/g")
    (reason,) = waits.reasons
    assert reason.kind is ReasonKind.NON_PREEMPTIBLE_OVER_QUOTA
    assert [fix.kind for fix in reason.fixes] == [FixKind.RAISE_QUEUE_QUOTA, FixKind.MAKE_PREEMPTIBLE]
    assert fix_text(waits) == "raise the GPU quota of queue q by 1 GPU (to 3)"


def test_fair_share_below_request_when_other_queues_hold_what_it_would_reclaim() -> None:
    """Queue a holds the whole node over its quota; b reclaims its share, and a's own new job may not reclaim."""
    a_jobs = [obj for i in range(4) for obj in running(f"a{i}", "a", 1, "n0")]
    state = cluster(
        ROOT,
        ("Queue", queue("a", parent="root", gpu_quota=2)),
        ("Queue", queue("b", parent="root", gpu_quota=2)),
        ("Node", node("n0", 4)),
        *a_jobs,
        *gang("b-job", "b", 1, 2),
        *gang("a-more", "a", 1, 1),
    )
    waits = waiting(state, "default/a-more")
    assert [r.kind for r in waits.reasons] == [ReasonKind.FAIR_SHARE, ReasonKind.NODE_FIT]
    assert waits.reasons[0].evidence == {
        "queue": "a", "resource": "GPU", "unit": "GPUs", "fairShare": 2, "allocated": 2, "requested": 1
    }  # fmt: skip
    assert fix_text(waits) == "raise the GPU quota of queue a by 1 GPU (to 3)"


def test_gang_short_by_one_says_how_many_fit_and_what_the_next_pod_lacks() -> None:
    state = cluster(
        ROOT, ("Queue", queue("q", parent="root")), ("Node", node("n0", 1)), ("Node", node("n1", 1)), *gang("g", "q", 3)
    )
    waits = waiting(state, "default/g")
    (reason,) = waits.reasons
    assert reason.kind is ReasonKind.GANG_SHORT
    assert reason.evidence == {"found": 2, "required": 3, "short": 1, "subgroup": ""}
    (child,) = reason.children
    assert child.kind is ReasonKind.NODE_FIT
    assert child.evidence["predicates"] == [
        {"predicate": "Resources", "nodes": 2, "text": "node(s) didn't have enough resources: GPUs"}
    ]
    assert fix_text(waits) == "1 more GPU free on node n0"


def test_node_fit_counts_nodes_per_predicate_and_prefers_a_taint_on_a_node_with_room() -> None:
    tainted = node("n-free", 4)
    tainted["spec"] = {"taints": [{"key": "team", "value": "infra", "effect": "NoSchedule"}]}
    state = cluster(
        ROOT,
        ("Queue", queue("q", parent="root")),
        ("Node", tainted),
        ("Node", node("n-full", 2)),
        *running("r", "q", 2, "n-full"),
        *gang("g", "q", 1, 2),
    )
    waits = waiting(state, "default/g")
    (reason,) = waits.reasons
    assert reason.kind is ReasonKind.NODE_FIT
    assert reason.evidence["predicates"] == [
        {"predicate": "Resources", "nodes": 1, "text": "node(s) didn't have enough resources: GPUs"},
        {"predicate": "Taint", "nodes": 1, "text": "node(s) had untolerated taint {team: infra}"},
    ]
    assert [fix.kind for fix in reason.fixes] == [FixKind.TOLERATE_TAINT, FixKind.FREE_ON_NODE]
    assert fix_text(waits) == "tolerate taint team=infra:NoSchedule (1 node with room, e.g. n-free)"


def test_node_fit_without_a_rule_to_relax_names_the_node_missing_the_least() -> None:
    state = cluster(
        ROOT,
        ("Queue", queue("q", parent="root")),
        ("Node", node("n0", 4)),
        ("Node", node("n1", 4)),
        *running("r0", "q", 3, "n0"),
        *running("r1", "q", 1, "n1"),
        *gang("g", "q", 1, 4),
    )
    waits = waiting(state, "default/g", ALLOCATE)
    assert waits.nearest_fix == Fix(
        FixKind.FREE_ON_NODE,
        {"node": "n1", "needs": [{"resource": "GPU", "unit": "GPUs", "more": 1, "free": 3, "requested": 4}]},
    )
    assert fix_text(waits) == "1 more GPU free on node n1"


def test_gpu_sharing_fit_names_the_gpu_memory_one_gpu_would_need() -> None:
    shared_node = node("n0", 1)
    shared_node["metadata"]["labels"]["nvidia.com/gpu.memory"] = "10000"
    holder = pod("half-0", "half", gpus=0, node_name="n0")
    holder["metadata"]["annotations"]["gpu-fraction"] = "0.5"
    holder["metadata"]["labels"] = {"runai-gpu-group": "g0"}
    wants = pod("big-0", "big", gpus=0)
    wants["metadata"]["annotations"]["gpu-fraction"] = "0.8"
    state = cluster(
        ROOT,
        ("Queue", queue("q", parent="root")),
        ("Node", shared_node),
        ("PodGroup", podgroup("half", "q", T0 - 60, minMember=1)),
        ("Pod", holder),
        ("PodGroup", podgroup("big", "q", T0, minMember=1)),
        ("Pod", wants),
    )
    waits = waiting(state, "default/big")
    (reason,) = waits.reasons
    assert reason.kind is ReasonKind.GPU_SHARING
    assert waits.nearest_fix == Fix(
        FixKind.FREE_GPU_MEMORY, {"node": "n0", "moreMiB": 3000, "freeMiB": 5000, "wantedMiB": 8000}
    )
    assert fix_text(waits) == "3000 MiB more GPU memory free on one GPU of node n0"


def _rack_node(name: str, rack: str, gpus: int) -> tuple[str, dict[str, Any]]:
    raw = node(name, gpus)
    raw["metadata"]["labels"]["rack"] = rack
    return ("Node", raw)


def test_topology_domain_names_the_rack_closest_to_holding_the_gang() -> None:
    """Two racks of two 2-GPU nodes; each rack has 3 GPUs free and the gang of four 1-GPU pods needs one rack."""
    topology = {"metadata": {"name": "racks"}, "spec": {"levels": [{"nodeLabel": "rack"}]}}
    constraint = {"topology": "racks", "requiredTopologyLevel": "rack"}
    state = cluster(
        ROOT,
        ("Queue", queue("q", parent="root")),
        ("Topology", topology),
        *[_rack_node(f"{rack}-n{i}", rack, 2) for rack in ("r1", "r2") for i in range(2)],
        *running("a", "q", 1, "r1-n0"),
        *running("b", "q", 1, "r2-n1"),
        *gang("g", "q", 4, topologyConstraint=constraint),
    )
    waits = waiting(state, "default/g", ALLOCATE)
    (reason,) = waits.reasons
    assert reason.kind is ReasonKind.TOPOLOGY
    assert reason.evidence == {
        "topology": "racks", "requiredLevel": "rack", "preferredLevel": "", "podgroup": "default/g", "subgroup": "",
        "domains": 2,
    }  # fmt: skip
    assert [(c.evidence["domain"], c.evidence["allocatablePods"]) for c in reason.children] == [("r1", 3), ("r2", 3)]
    assert waits.nearest_fix == Fix(
        FixKind.FREE_IN_DOMAIN,
        {
            "level": "rack", "domain": "r1", "pods": 1, "moreGPUs": 1, "node": "r1-n0",
            "needs": [{"resource": "GPU", "unit": "GPUs", "more": 1}],
        },
    )  # fmt: skip
    assert fix_text(waits) == "1 more GPU free on one node of r1 (rack) (r1-n0 comes closest)"


def test_a_missing_topology_is_created_or_renamed() -> None:
    constraint = {"topology": "nowhere", "requiredTopologyLevel": "rack"}
    state = cluster(
        ROOT,
        ("Queue", queue("q", parent="root")),
        ("Node", node("n0", 4)),
        *gang("g", "q", 1, topologyConstraint=constraint),
    )
    waits = waiting(state, "default/g")
    assert waits.reasons[0].kind is ReasonKind.TOPOLOGY
    assert fix_text(waits) == "create Topology nowhere, or name an existing one"


def _delayed(extra: list[tuple[str, Any]]) -> ClusterState:
    """A build job of queue b with a 10m preemption delay wants the GPU a train job of queue a holds."""
    return cluster(
        ROOT,
        ("Queue", queue("a", parent="root", gpu_quota=0)),
        ("Queue", queue("b", parent="root", gpu_quota=1)),
        ("Node", node("n0", 1)),
        *running("victim", "a", 1, "n0"),
        ("PodGroup", podgroup("late", "b", T0, minMember=1, preemptionDelay="10m")),
        ("Pod", pod("late-0", "late")),
        *extra,
    )


def test_preemption_delay_says_until_when_and_who_could_be_reclaimed_then() -> None:
    waits = waiting(_delayed([]), "default/late", now=T0 + 60)
    kinds = [r.kind for r in waits.reasons]
    assert kinds[:2] == [ReasonKind.RECLAIMABLE_AFTER_DELAY, ReasonKind.PREEMPTION_DELAY]
    delay = waits.reasons[1]
    assert delay.evidence == {"delaySeconds": 600.0, "until": T0 + 600}
    assert delay.fixes == (Fix(FixKind.WAIT_UNTIL, {"until": T0 + 600}),)
    assert waits.reasons[0].evidence == {"until": T0 + 600, "queues": [{"queue": "a", "gpus": 1}]}
    assert fix_text(waits, T0 + 60) == "wait until 00:10:00Z (in 9m0s): then reclaim can take 1 GPU from queue a"


def test_victims_protected_by_min_runtime_say_whom_to_wait_for_and_until_when() -> None:
    protected = queue("a", parent="root", gpu_quota=0)
    protected["spec"]["reclaimMinRuntime"] = "1h"
    state = cluster(
        ROOT,
        ("Queue", protected),
        ("Queue", queue("b", parent="root", gpu_quota=2)),
        ("Node", node("n0", 2)),
        *running("old", "a", 1, "n0", started=T0 - 3000),
        *running("young", "a", 1, "n0", started=T0 - 600),
        *gang("wants", "b", 1, 2),
    )
    waits = waiting(state, "default/wants")
    assert waits.reasons[0].kind is ReasonKind.MIN_RUNTIME
    assert waits.reasons[0].evidence == {
        "victims": [
            {"podgroup": "default/old", "queue": "a", "until": T0 + 600, "gpus": 1, "action": "reclaim"},
            {"podgroup": "default/young", "queue": "a", "until": T0 + 3000, "gpus": 1, "action": "reclaim"},
        ]
    }
    assert waits.nearest_fix == Fix(
        FixKind.WAIT_FOR_JOB, {"podgroup": "default/young", "queue": "a", "until": T0 + 3000}
    )
    assert fix_text(waits) == "wait for default/young (queue a): its min runtime ends at 00:50:00Z (in 50m0s)"


def _claim_pod(claim: str) -> dict[str, Any]:
    raw = pod("c-0", "c", gpus=0)
    raw["spec"]["resourceClaims"] = [{"name": "gpu", "resourceClaimName": claim}]
    return raw


def test_dra_claim_missing_or_feature_gate_off() -> None:
    objects = (
        ROOT,
        ("Queue", queue("q", parent="root")),
        ("Node", node("n0", 1)),
        ("PodGroup", podgroup("c", "q", T0, minMember=1)),
    )
    gated_on = parse_config({"featureGates": {"DynamicResourceAllocation": True}})
    waits = waiting(cluster(*objects, ("Pod", _claim_pod("mine"))), "default/c", gated_on)
    assert waits.reasons[0].kind is ReasonKind.DRA
    assert waits.reasons[0].evidence == {"pod": "default/c-0", "problem": "claim missing", "claim": "default/mine"}
    assert fix_text(waits) == "create resource claim default/mine"
    waits = waiting(cluster(*objects, ("Pod", _claim_pod("mine"))), "default/c")
    assert fix_text(waits) == "enable the scheduler's DynamicResourceAllocation feature gate"


def test_scheduling_gates_name_the_gated_pods() -> None:
    gated = pod("g-1", "g")
    gated["spec"]["schedulingGates"] = [{"name": "wait-for-data"}]
    state = cluster(
        ROOT, ("Queue", queue("q", parent="root")), ("Node", node("n0", 4)),
        ("PodGroup", podgroup("g", "q", T0, minMember=2)), ("Pod", pod("g-0", "g")), ("Pod", gated),
    )  # fmt: skip
    waits = waiting(state, "default/g")
    assert waits.reason == "NotReady"
    (reason,) = waits.reasons
    assert reason.kind is ReasonKind.SCHEDULING_GATE
    assert reason.evidence == {
        "podSets": [{"subgroup": "", "minMember": 2, "exist": 2, "gated": 1}],
        "gatedPods": ["default/g-1"],
    }
    assert fix_text(waits) == "remove the scheduling gates of default/g-1"


def test_a_gang_with_too_few_pods_asks_for_the_missing_ones() -> None:
    state = cluster(
        ROOT, ("Queue", queue("q", parent="root")), ("Node", node("n0", 4)),
        ("PodGroup", podgroup("g", "q", T0, minMember=3)), ("Pod", pod("g-0", "g")),
    )  # fmt: skip
    waits = waiting(state, "default/g")
    assert waits.reasons[0].kind is ReasonKind.GANG_INCOMPLETE
    assert waits.nearest_fix == Fix(FixKind.CREATE_PODS, {"subgroup": "", "count": 2})
    assert fix_text(waits) == "create 2 more pods"


def test_a_gang_with_too_few_pods_gets_kais_notready_event_text() -> None:
    """KAI records ``NotReady`` with its own message on the podgroup (no period after the default set's part, one
    after a sub-group's); kai's condition and pod events render the same text once, with one period."""
    state = cluster(
        ROOT, ("Queue", queue("q", parent="root")), ("Node", node("n0", 4)),
        ("PodGroup", podgroup("g", "q", T0, minMember=2)), ("Pod", pod("g-0", "g")),
        ("PodGroup", podgroup("s", "q", T0, subGroups=[{"name": "a", "minMember": 2}, {"name": "b", "minMember": 5}])),
        *[("Pod", pod(f"s-{i}", "s", subgroup="b")) for i in range(3)],
        *[("Pod", pod(f"s-a{i}", "s", subgroup="a")) for i in range(2)],
    )  # fmt: skip
    waits = waiting(state, "default/g")
    text = "Job is not ready for scheduling. Waiting for 2 pods, currently 1 exist, 0 are gated"
    assert waits.event == ("NotReady", text)
    assert waits.message == f"NotReady: {text}."
    waits = waiting(state, "default/s")
    text = "Job is not ready for scheduling. Waiting for 5 pods for SubGroup b, currently 3 exist, 0 are gated."
    assert waits.event == ("NotReady", text)
    assert waits.message == f"NotReady: {text}"


def test_a_min_subgroup_above_the_children_says_so_after_kais_notready_text() -> None:
    """KAI's scheduler says only "Job is not ready for scheduling." (every pod set is ready); kai adds why, in the
    words of KAI's admission warning."""
    subgroups = [{"name": "a", "minMember": 1}, {"name": "b", "minMember": 1}]
    state = cluster(
        ROOT, ("Queue", queue("q", parent="root")), ("Node", node("n0", 4)),
        ("PodGroup", podgroup("g", "q", T0, minSubGroup=3, subGroups=subgroups)),
        ("Pod", pod("g-0", "g", subgroup="a")), ("Pod", pod("g-1", "g", subgroup="b")),
    )  # fmt: skip
    waits = waiting(state, "default/g")
    why = "minSubGroup (3) exceeds the number of direct child SubGroups (2)"
    assert waits.event == ("NotReady", f"Job is not ready for scheduling. ({why}: the gang can never start)")
    (reason,) = waits.reasons
    assert reason.evidence == {"podSets": [], "unreachable": [why]}
    assert describe(reason) == f"{why}: the gang can never start"
    assert waits.nearest_fix is None


def test_an_unknown_queue_is_to_be_created_and_an_invalid_one_fixed() -> None:
    state = cluster(ROOT, ("Node", node("n0", 4)), *gang("g", "nowhere", 1))
    waits = waiting(state, "default/g")
    assert waits.reasons == (
        Reason(ReasonKind.QUEUE_UNUSABLE, {"queue": "nowhere"}, (Fix(FixKind.CREATE_QUEUE, {"queue": "nowhere"}),)),
    )
    orphan = queue("lost", parent="gone")
    state = cluster(ROOT, ("Node", node("n0", 4)), *gang("g", "lost", 1))
    state.apply("Queue", orphan)
    waits = waiting(state, "default/g")
    assert waits.reasons[0].kind is ReasonKind.QUEUE_UNUSABLE
    assert fix_text(waits) == "fix Queue lost, field spec.parentQueue: parent queue 'gone' does not exist"


def test_a_pod_larger_than_any_node_is_told_the_largest() -> None:
    state = cluster(ROOT, ("Queue", queue("q", parent="root")), ("Node", node("n0", 8)), *gang("g", "q", 1, 16))
    waits = waiting(state, "default/g")
    (reason,) = waits.reasons
    assert reason.kind is ReasonKind.TOO_LARGE
    assert reason.evidence == {"pod": "default/g-0", "resource": "GPU", "unit": "GPUs", "requested": 16, "largest": 8}
    assert fix_text(waits) == "request at most 8 GPUs (the largest node), or add a larger node"


def test_invalid_object_pipelined_and_unknown_reasons_built_outside_a_cycle() -> None:
    bad = invalid_object(
        "Pod default/p", "metadata.annotations.gpu-fraction", 'allowed: a number in (0, 1], e.g. "0.5"'
    )
    assert bad.kind is ReasonKind.INVALID_OBJECT and bad.fix is not None
    assert describe_fix(bad.fix) == (
        'fix Pod default/p, field metadata.annotations.gpu-fraction: allowed: a number in (0, 1], e.g. "0.5"'
    )
    wait = pipelined(["n1", "n0", "n1"])
    assert wait.evidence == {"nodes": ["n0", "n1"]} and wait.fix == Fix(
        FixKind.WAIT_FOR_EVICTIONS, {"nodes": ["n0", "n1"]}
    )
    assert describe(Reason(ReasonKind.UNKNOWN, {"text": " something KAI said "})) == "something KAI said"


def test_the_headline_is_the_most_decisive_reason_and_its_fix_the_nearest() -> None:
    assert len(SEVERITY) == len(ReasonKind)
    node_fit = Reason(ReasonKind.NODE_FIT, {}, (Fix(FixKind.FREE_ON_NODE, {"node": "n0", "needs": []}),))
    limit = Reason(ReasonKind.QUEUE_LIMIT, {}, ())
    delay = Reason(ReasonKind.PREEMPTION_DELAY, {}, (Fix(FixKind.WAIT_UNTIL, {"until": T0}),))
    assert nearest_fix([node_fit, limit, delay]) == Fix(FixKind.WAIT_UNTIL, {"until": T0})
