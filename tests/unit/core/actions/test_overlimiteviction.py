"""overlimiteviction (kai's, KAI #1783): a queue whose limit was cut below what it runs gives the excess back over
the following cycles, worst job first, within the eviction budget, never taking a job within its min runtime, and
never a non-preemptible one; what it evicted waits at the limit, so nothing comes back to be evicted again."""

from typing import Any

from sim_support import gpu_pod, node, phases, queue, simulation, step

from kai.core.actions import overlimiteviction
from kai.core.framework.config import DEFAULT_ACTIONS

ACTIONS = ", ".join((*DEFAULT_ACTIONS, overlimiteviction.NAME))


def cut(sim: Any, limit: int) -> None:
    team = sim.cluster.get("Queue", "team")
    team["spec"]["resources"]["gpu"]["limit"] = limit
    sim.cluster.update("Queue", team)


def running_world(**config: Any) -> Any:
    objects = [queue("team", 0, 4), node("n1", 8), *(gpu_pod(f"p{i}", "team", on="n1") for i in range(4))]
    return simulation(objects, {"actions": ACTIONS, **config})


def test_a_limit_cut_evicts_down_to_the_new_limit_and_nothing_loops() -> None:
    sim = running_world()
    assert not step(sim).session.result.evictions
    cut(sim, 2)
    evicted = step(sim).session.result.evictions
    assert [(e.pod_key, e.audit) for e in evicted] == [
        ("ns/p3", "evicted by overlimiteviction: queue team over its GPU limit by 2 GPUs"),
        ("ns/p2", "evicted by overlimiteviction: queue team over its GPU limit by 1 GPU"),
    ]
    for _ in range(5):
        record = step(sim)
        assert not record.session.result.evictions and not record.session.result.binds
    assert phases(sim) == {"p0": "Running", "p1": "Running", "p2": "Pending", "p3": "Pending"}


def test_the_eviction_budget_spreads_the_cut_over_cycles() -> None:
    sim = running_world(disruption={"evictionBudget": {"perCycle": 1}})
    step(sim)
    cut(sim, 2)
    assert [len(step(sim).session.result.evictions) for _ in range(4)] == [1, 1, 0, 0]


def test_jobs_within_their_min_runtime_are_left_until_it_ends() -> None:
    tiers = [
        {
            "plugins": [
                {"name": "proportion"},
                {"name": "priority"},
                {"name": "minruntime", "arguments": {"defaultPreemptMinRuntime": "35s"}},
            ]
        }
    ]
    objects = [queue("team", 0, 4), node("n1", 8), *(gpu_pod(f"p{i}", "team") for i in range(4))]
    sim = simulation(objects, {"actions": ACTIONS, "tiers": tiers})
    step(sim)  # placed at 0s: their PodGroups' last start
    step(sim)
    cut(sim, 3)
    assert [len(step(sim).session.result.evictions) for _ in range(4)] == [0, 0, 1, 0]  # 20s, 30s, 40s, 50s


def test_without_the_action_the_queue_runs_over_its_limit_as_in_kai() -> None:
    sim = simulation([queue("team", 0, 4), node("n1", 8), *(gpu_pod(f"p{i}", "team", on="n1") for i in range(4))])
    step(sim)
    cut(sim, 2)
    assert not any(step(sim).session.result.evictions for _ in range(3))


def test_non_preemptible_jobs_are_never_evicted() -> None:
    pods = [gpu_pod(f"p{i}", "team", on="n1") for i in range(4)]
    for pod in pods:
        pod["metadata"]["labels"]["kai.scheduler/preemptibility"] = "non-preemptible"
    sim = simulation([queue("team", 0, 4), node("n1", 8), *pods], {"actions": ACTIONS})
    step(sim)
    cut(sim, 2)
    assert not any(step(sim).session.result.evictions for _ in range(3))


def test_a_job_holding_none_of_what_is_over_the_limit_is_left_running() -> None:
    """Evicting it would not bring the queue back under its limit, and allocate would place it again (the property
    machine found a CPU-only gang evicted and placed back, cycle after cycle, in a queue over its GPU limit)."""
    inference = {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": "inference"}}
    kept = [gpu_pod(f"p{i}", "team", on="n1") for i in range(4)]
    for pod in kept:  # non-preemptible: never evicted, so the queue stays over its cut limit
        pod["spec"]["priorityClassName"] = "inference"
    cpu_only = gpu_pod("cpu-only", "team", on="n1", gpus=0)
    objects = [{**inference, "value": 125}, queue("team", 0, 4), node("n1", 8), *kept, cpu_only]
    sim = simulation(objects, {"actions": ACTIONS})
    step(sim)
    cut(sim, 2)
    for _ in range(4):
        assert not step(sim).session.result.evictions
    assert phases(sim)["cpu-only"] == "Running"
