"""Suspend instead of delete (kai's, KAI #1386): a workload that opted in (its annotation, or its queue's) and is
evicted whole is suspended; its pods are recorded on its PodGroup, stand-ins of them wait in its queue, and it is
resumed once they fit again. The simulator's stand-ins do what the workload controllers do with ``suspend``."""

from typing import Any

from sim_support import gpu_pod, node, queue, simulation, step

from kai.core.model import names

SUSPEND = {names.EVICTION_STRATEGY_ANNOTATION: names.SUSPEND}


def job(annotations: dict[str, str] | None = None) -> dict[str, Any]:
    template = {
        "metadata": {"labels": {"kai.scheduler/queue": "team-vision"}},
        "spec": {
            "schedulerName": "kai-scheduler",
            "restartPolicy": "Never",
            "containers": [{"name": "main", "resources": {"limits": {"nvidia.com/gpu": "1"}}}],
        },
    }
    meta = {"name": "train", "namespace": "ns", "uid": "train-uid", "annotations": annotations or {}}
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": meta,
        "spec": {"parallelism": 2, "completions": 2, "template": template},
    }


def world(vision: dict[str, Any], annotations: dict[str, str] | None = None) -> Any:
    sim = simulation([vision, queue("team-llm", quota=2), node("n1", 2), job(annotations)])
    step(sim)  # the Job's two pods placed
    step(sim)
    for i in range(2):
        sim.cluster.create("Pod", gpu_pod(f"llm-{i}", "team-llm"))
    return sim


def pods(sim: Any) -> dict[str, str]:
    return {
        p["metadata"]["name"]: p["status"]["phase"]
        for p in sim.cluster.list("Pod")
        if "llm" not in p["metadata"]["name"]
    }


def suspended(sim: Any) -> bool:
    found = sim.cluster.get("Job", "ns/train")
    return bool(found and found["spec"].get("suspend"))


def test_a_workload_that_opted_in_is_suspended_waits_as_stand_ins_and_is_resumed_when_they_fit() -> None:
    sim = world(queue("team-vision", quota=0), SUSPEND)
    reclaimed = step(sim).session.result
    assert len(reclaimed.evictions) == 2 and {e.suspend.name for e in reclaimed.evictions if e.suspend} == {"train"}
    assert suspended(sim) and pods(sim) == {}  # the Job controller took its pods; the scheduler deleted none
    waiting = step(sim)  # the reclaimers bound; the Job's stand-ins wait in its queue
    stand_ins = waiting.session.jobs["ns/pg-train-train-uid"].tasks
    assert sorted(stand_ins) == ["ns/pg-train-train-uid~suspended-0", "ns/pg-train-train-uid~suspended-1"]
    for i in range(2):
        done = sim.cluster.get("Pod", f"ns/llm-{i}")
        done["status"]["phase"] = "Succeeded"
        sim.cluster.update_status("Pod", done)
    resumed = step(sim)
    assert [b.pod_key for b in resumed.session.result.binds] == sorted(stand_ins)  # placed: the Job is resumed
    assert not suspended(sim) and set(pods(sim).values()) == {"Pending"}
    step(sim)
    assert set(pods(sim).values()) == {"Running"}
    podgroup = sim.cluster.get("PodGroup", "ns/pg-train-train-uid")
    assert names.SUSPENDED_PODS_ANNOTATION not in podgroup["metadata"]["annotations"]  # its pods are back


def _reclaimers_done(sim: Any, *names_: str) -> None:
    for name in names_:
        done = sim.cluster.get("Pod", f"ns/{name}")
        done["status"]["phase"] = "Succeeded"
        sim.cluster.update_status("Pod", done)


def test_a_workload_suspended_again_is_resumed_again() -> None:
    sim = world(queue("team-vision", quota=0), SUSPEND)
    for round_ in range(2):  # the property machine found the second resumption never sent
        step(sim)
        assert suspended(sim), round_
        step(sim)
        _reclaimers_done(
            sim, *(p["metadata"]["name"] for p in sim.cluster.list("Pod") if "llm" in p["metadata"]["name"])
        )
        step(sim)
        assert not suspended(sim), round_
        step(sim)
        assert set(pods(sim).values()) == {"Running"}, round_
        for i in range(2):  # new reclaimers: the Job is suspended again
            sim.cluster.create("Pod", gpu_pod(f"llm-{round_}-{i}", "team-llm"))


def test_the_record_stays_while_the_suspended_workloads_controller_has_yet_to_take_its_pods() -> None:
    sim = world(queue("team-vision", quota=0), SUSPEND)
    step(sim)
    assert suspended(sim)
    late = gpu_pod("train-late", "team-vision", on="n1")  # a pod of it its controller has not deleted yet
    late["metadata"]["annotations"] = {names.POD_GROUP_ANNOTATION: "pg-train-train-uid"}
    sim.cluster.create("Pod", late)
    step(sim)
    podgroup = sim.cluster.get("PodGroup", "ns/pg-train-train-uid")
    assert names.SUSPENDED_PODS_ANNOTATION in podgroup["metadata"]["annotations"]  # what resumes it later


def test_a_queue_can_opt_all_its_workloads_in() -> None:
    sim = world(queue("team-vision", quota=0, **SUSPEND))
    step(sim)
    assert suspended(sim)


def test_a_workload_opts_out_of_its_queues_choice() -> None:
    sim = world(queue("team-vision", quota=0, **SUSPEND), {names.EVICTION_STRATEGY_ANNOTATION: names.DELETE})
    assert all(e.suspend is None for e in step(sim).session.result.evictions)
    assert not suspended(sim)


def test_without_opting_in_the_pods_are_evicted_as_kai_does() -> None:
    sim = world(queue("team-vision", quota=0))
    assert all(e.suspend is None for e in step(sim).session.result.evictions)
    assert not suspended(sim)
