"""What the scheduler may do to running work (kai's, beyond KAI): victims only as their PodDisruptionBudgets allow,
at most the eviction budget per cycle and per minute, and no evictions for a podgroup whose priority class says
``preemptionPolicy: Never``. Run on the embedded cluster, whose eviction subresource judges PDBs as the API server
does and whose disruption-controller stand-in keeps their status."""

import json
from typing import Any

import core_builders as builders
from sim_support import gpu_pod, node, pdb, phases, queue, simulation, step

from kai.core.framework.config import DisruptionConfig
from kai.core.framework.disruption import Disruption
from kai.core.model import names
from kai.core.state.reasons import ReasonKind
from kai.core.state.snapshot import ClusterInfo, take_snapshot

VISION = {"app": "vision"}


def reclaim_world(victims: int = 4, reclaimers: int = 3, **budget: int | str) -> list[dict[str, Any]]:
    """team-vision (quota 0) runs ``victims`` one-GPU pods on a full 4-GPU node; team-llm (quota 4) has
    ``reclaimers`` pending one-GPU pods; with ``budget``, a PDB over team-vision's pods."""
    objects = [queue("team-vision", quota=0), queue("team-llm", quota=4), node("n1", 4)]
    objects += [gpu_pod(f"vision-{i}", "team-vision", on="n1", labels=VISION) for i in range(victims)]
    objects += [gpu_pod(f"llm-{i}", "team-llm") for i in range(reclaimers)]
    if budget:
        objects.append(pdb("vision", VISION, **budget))
    return objects


def test_a_pdb_allowing_one_disruption_lets_reclaim_take_one_pod_and_the_other_reclaimers_wait_saying_why() -> None:
    sim = simulation(reclaim_world(minAvailable=3))
    first = step(sim)
    assert [e.pod_key for e in first.session.result.evictions] == ["ns/vision-3"]
    waiting = {key: note.kind for key, note in first.session.disruption.notes.items()}
    assert set(waiting.values()) == {ReasonKind.DISRUPTION_BUDGET}
    note = next(iter(first.session.disruption.notes.values()))
    assert note.evidence["budgets"] == [{"budget": "ns/vision", "spec": "minAvailable: 3", "allowed": 0, "wanted": 1}]
    for _ in range(4):
        assert not step(sim).session.result.evictions  # the evicted pod's replacement is not healthy: 0 allowed
    assert sorted(p for p, phase in phases(sim).items() if p.startswith("vision") and phase == "Running") == [
        "vision-0",
        "vision-1",
        "vision-2",
    ]


def test_relaxing_the_pdb_lets_the_next_cycle_take_one_more() -> None:
    sim = simulation(reclaim_world(minAvailable=3))
    step(sim)
    step(sim)
    budget = sim.cluster.get("PodDisruptionBudget", "ns/vision")
    assert budget is not None
    budget["spec"]["minAvailable"] = 2
    sim.cluster.update("PodDisruptionBudget", budget)
    step(sim)  # the controller stand-in sees the new spec after this cycle
    assert [e.pod_key for e in step(sim).session.result.evictions] == ["ns/vision-2"]


def test_a_victim_job_its_pdb_protects_is_passed_over_for_one_without() -> None:
    objects = [queue("team-vision", quota=0), queue("team-llm", quota=1), node("n1", 2)]
    objects += [gpu_pod("protected", "team-vision", on="n1", labels=VISION), gpu_pod("free", "team-vision", on="n1")]
    objects += [gpu_pod("llm-0", "team-llm"), pdb("vision", VISION, maxUnavailable=0)]
    assert [e.pod_key for e in step(simulation(objects)).session.result.evictions] == ["ns/free"]


def test_a_pod_two_pdbs_cover_is_never_a_victim_the_eviction_api_would_refuse_it() -> None:
    objects = reclaim_world(victims=4, reclaimers=1, minAvailable=0)
    objects.append(pdb("vision-too", VISION, minAvailable=0))
    record = step(simulation(objects))
    assert not record.session.result.evictions
    [note] = record.session.disruption.notes.values()
    assert note.evidence["budgets"][0]["budget"] == "<several>"


def test_with_pdbs_off_the_victims_are_chosen_and_deleted_as_kai_does() -> None:
    sim = simulation(reclaim_world(minAvailable=4), {"disruption": {"podDisruptionBudgets": False}})
    assert len(step(sim).session.result.evictions) == 3
    vision = {name: phase for name, phase in phases(sim).items() if name.startswith("vision")}
    assert sorted(vision.values()) == ["Pending", "Pending", "Pending", "Running"]  # deleted, made again
    budget = sim.cluster.get("PodDisruptionBudget", "ns/vision")
    assert budget is not None and "disruptedPods" not in budget["status"]  # no eviction went through the API


def test_the_per_cycle_budget_caps_the_evictions_and_the_rest_go_in_the_next_cycles() -> None:
    sim = simulation(reclaim_world(), {"disruption": {"evictionBudget": {"perCycle": 2}}})
    first = step(sim)
    assert len(first.session.result.evictions) == 2
    [note] = first.session.disruption.notes.values()
    assert note.kind is ReasonKind.EVICTION_BUDGET
    assert (note.evidence["window"], note.evidence["cap"], note.evidence["used"]) == ("cycle", 2, 2)
    assert len(step(sim).session.result.evictions) == 1


def test_the_per_minute_budget_counts_what_the_last_minute_evicted() -> None:
    sim = simulation(reclaim_world(), {"disruption": {"evictionBudget": {"perMinute": 2}}}, period_s=20.0)
    evicted = [len(step(sim).session.result.evictions) for _ in range(5)]
    assert evicted == [2, 0, 0, 1, 0]  # cycles at 0s, 20s, 40s, 60s: the first two are out of the window at 60s


def test_the_per_minute_budget_also_counts_the_evictions_the_podgroups_records_tell_after_a_restart() -> None:
    objects = reclaim_world()
    record = {"recent": [["1970-01-01T00:00:00Z", 2]]}
    objects.append(
        {
            "apiVersion": "scheduling.run.ai/v2alpha2",
            "kind": "PodGroup",
            "metadata": {
                "name": "earlier",
                "namespace": "ns",
                "annotations": {names.EVICTION_RECORD_ANNOTATION: json.dumps(record)},
            },
            "spec": {"queue": "team-vision"},
        }
    )
    sim = simulation(objects, {"disruption": {"evictionBudget": {"perMinute": 3}}}, period_s=20.0)
    assert [len(step(sim).session.result.evictions) for _ in range(4)] == [1, 0, 0, 2]


def test_a_reclaimer_not_tried_because_one_like_it_failed_is_told_the_same_reason() -> None:
    session = step(simulation(reclaim_world(minAvailable=4))).session
    notes = {key: note.kind for key, note in session.disruption.notes.items()}
    assert len(notes) == 3 and set(notes.values()) == {ReasonKind.DISRUPTION_BUDGET}


def test_a_stale_gang_is_evicted_in_parts_the_budget_allows() -> None:
    objects: list[dict[str, Any]] = [queue("team"), node("n1", 4)]
    podgroup = {
        "apiVersion": "scheduling.run.ai/v2alpha2",
        "kind": "PodGroup",
        "metadata": {"name": "gang", "namespace": "ns"},
        "spec": {"queue": "team", "minMember": 4},
    }
    pods = [gpu_pod(f"g{i}", "team", on="n1") for i in range(3)]
    for pod in pods:
        pod["metadata"]["annotations"] = {"pod-group-name": "gang"}
    config = {"globalDefaultStalenessGracePeriod": "0s", "disruption": {"evictionBudget": {"perCycle": 2}}}
    sim = simulation([*objects, podgroup, *pods], config)
    assert len(step(sim).session.result.evictions) == 2
    assert len(step(sim).session.result.evictions) == 1


def test_only_running_pods_count_against_their_pdb() -> None:
    """The Eviction API lets a pod that does not run go whatever its PDB says."""
    objects = reclaim_world(victims=1, reclaimers=0, maxUnavailable=0)
    objects.append(gpu_pod("waiting", "team-vision", labels=VISION))
    session = simulation(objects).cycle(1).session
    tasks = {t.name: t for job in session.jobs.values() for t in job.tasks.values()}
    assert session.disruption.budget_of(tasks["vision-0"]) == "ns/vision"
    assert session.disruption.budget_of(tasks["waiting"]) is None


# ------------------------------------------------------------------------------------------- preemptionPolicy: Never


def never_world() -> list[dict[str, Any]]:
    """A full 1-GPU node running a low-priority pod; a pending pod of a higher, never-preempting class."""
    never = {
        "apiVersion": "scheduling.k8s.io/v1",
        "kind": "PriorityClass",
        "metadata": {"name": "urgent-no-preempt"},
        "value": 90,
        "preemptionPolicy": "Never",
    }
    low = {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": "low"}, "value": 10}
    running = gpu_pod("low", "team", on="n1")
    running["spec"]["priorityClassName"] = "low"
    waiting = gpu_pod("urgent", "team")
    waiting["spec"]["priorityClassName"] = "urgent-no-preempt"
    return [never, low, queue("team"), node("n1", 1), running, waiting]


def test_a_podgroup_of_a_never_preempting_class_waits_without_preempting_and_says_why() -> None:
    sim = simulation(never_world())
    for _ in range(3):
        record = step(sim)
        assert not record.session.result.evictions
    [note] = record.session.disruption.notes.values()
    assert note.kind is ReasonKind.PREEMPTION_NEVER and note.evidence == {"priorityClass": "urgent-no-preempt"}
    assert phases(sim) == {"low": "Running", "urgent": "Pending"}


def test_it_takes_room_that_frees_up() -> None:
    sim = simulation(never_world())
    step(sim)
    low = sim.cluster.get("Pod", "ns/low")
    assert low is not None
    low["status"]["phase"] = "Succeeded"
    sim.cluster.update_status("Pod", low)
    assert [b.pod_key for b in step(sim).session.result.binds] == ["ns/urgent"]


def test_with_the_policy_not_honoured_it_preempts_as_kai_does() -> None:
    sim = simulation(never_world(), {"disruption": {"preemptionPolicy": False}})
    assert [e.pod_key for e in step(sim).session.result.evictions] == ["ns/low"]


def _budgeted_cluster(allowed: int) -> ClusterInfo:
    """Three running one-GPU pods of podgroup train, each covered by the PDB ``vision`` whose status allows
    ``allowed`` disruptions."""
    pods = [builders.pod(f"p{i}", "train", node_name="n1") for i in range(3)]
    for raw in pods:
        raw["metadata"]["labels"] = {"app": "vision"}
    budget = pdb("vision", {"app": "vision"}, minAvailable=3 - allowed)
    budget["metadata"]["namespace"] = "default"
    budget["status"] = {"disruptionsAllowed": allowed}
    state = builders.cluster(
        ("Queue", builders.queue("team")),
        ("Node", builders.node("n1", 4)),
        ("PodGroup", builders.podgroup("train", "team", builders.T0)),
        *(("Pod", raw) for raw in pods),
        ("PodDisruptionBudget", budget),
    )
    return take_snapshot(state, "kai-scheduler")


def test_a_batch_past_the_pdbs_allowance_is_refused_naming_the_pdb_and_a_commit_uses_the_allowance_up() -> None:
    info = _budgeted_cluster(allowed=2)
    tasks = sorted(info.jobs["default/train"].tasks.values(), key=lambda task: task.key)
    disruption = Disruption(info, DisruptionConfig())
    assert disruption.active and disruption.refusal(tasks[:2], "reclaim") is None
    refused = disruption.refusal(tasks, "reclaim")
    assert refused is not None and refused.kind is ReasonKind.DISRUPTION_BUDGET
    assert refused.evidence["budgets"] == [
        {"budget": "default/vision", "spec": "minAvailable: 1", "allowed": 2, "wanted": 3}
    ]
    disruption.consume(tasks[:2])
    assert disruption.refusal(tasks[2:], "reclaim") is not None
    assert Disruption(info, DisruptionConfig(pod_disruption_budgets=False)).refusal(tasks, "reclaim") is None


def test_the_eviction_budget_is_asked_before_the_pdbs_and_counts_down_with_each_commit() -> None:
    info = _budgeted_cluster(allowed=3)
    tasks = sorted(info.jobs["default/train"].tasks.values(), key=lambda task: task.key)
    disruption = Disruption(info, DisruptionConfig(per_cycle=2))
    refused = disruption.refusal(tasks, "preempt")
    assert refused is not None and refused.kind is ReasonKind.EVICTION_BUDGET
    assert refused.evidence == {"window": "cycle", "cap": 2, "used": 0, "wanted": 3, "action": "preempt"}
    disruption.consume(tasks[:1])
    assert disruption.refusal(tasks[1:2], "preempt") is None
    refused = disruption.refusal(tasks[1:], "preempt")
    assert refused is not None and refused.evidence["used"] == 1
