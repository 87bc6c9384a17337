"""A PodGroup of ``minMember: 0`` has no gang (KAI #1989, #2018): every pod is elastic, so with none running the job
is at its minimum, not below it. KAI v0.17 counted 0 as 1."""

from typing import Any

from core_builders import T0, cluster, node, pod, podgroup, queue

from kai.core.cycle import run_cycle
from kai.core.framework.config import SchedulerConfig
from kai.core.plugins import elastic
from kai.core.state.snapshot import take_snapshot


def _objects(*podgroups: dict[str, Any], pods: int = 1) -> list[tuple[str, dict[str, Any]]]:
    objects: list[tuple[str, dict[str, Any]]] = [("Queue", queue("q")), ("Node", node("n1", 1))]
    for raw in podgroups:
        name = raw["metadata"]["name"]
        objects += [("PodGroup", raw), *(("Pod", pod(f"{name}-{i}", name)) for i in range(pods))]
    return objects


def test_a_job_of_no_gang_is_at_its_minimum_with_nothing_running() -> None:
    job = take_snapshot(cluster(*_objects(podgroup("web", "q", T0, minMember=0), pods=3)), "kai-scheduler", T0)
    web = job.jobs["default/web"]
    assert [pod_set.min_available for pod_set in web.pod_sets.values()] == [0]
    assert web.is_gang_satisfied() and web.is_ready_for_scheduling()
    assert elastic.job_key(web) == 1  # "exactly at its minimum"; v0.17's minimum of 1 made it 0, "below its gang"


def test_a_gang_below_its_minimum_goes_before_an_older_job_of_no_gang() -> None:
    older = podgroup("scale-to-zero", "q", T0 - 60, minMember=0)
    newer = podgroup("gang", "q", T0, minMember=1)
    ssn = run_cycle(take_snapshot(cluster(*_objects(older, newer)), "kai-scheduler", T0), SchedulerConfig(), T0)
    assert [bind.pod_key for bind in ssn.result.binds] == ["default/gang-0"]
