"""gpujoborder on a bare session: one job-order hook, which breaks a priority tie by requested GPUs (KAI #1995's
gpujoborder_test.go, case by case)."""

from typing import Any

from core_builders import T0, cluster, node, pod, podgroup, queue

from kai.core.config import parse_config
from kai.core.framework.config import SchedulerConfig
from kai.core.framework.session import Session
from kai.core.plugins.gpujoborder import GpuJobOrderPlugin
from kai.core.state.pod_status import PodStatus
from kai.core.state.podgroup_info import PodGroupInfo
from kai.core.state.snapshot import take_snapshot


def _jobs(*specs: tuple[str, str, int]) -> dict[str, PodGroupInfo]:
    """(name, priority class, GPUs of its one running pod) per job."""
    objects: list[tuple[str, dict[str, Any]]] = [("Queue", queue("q")), ("Node", node("n1", 8))]
    for name, priority_class, gpus in specs:
        objects.append(("PodGroup", podgroup(name, "q", T0, priority_class=priority_class)))
        objects.append(("Pod", pod(f"{name}-0", name, gpus=gpus, node_name="n1")))
    snapshot = take_snapshot(cluster(*objects), "kai-scheduler", T0)
    return {key.split("/")[1]: job for key, job in snapshot.jobs.items()}


def _hook(arguments: dict[str, Any]) -> Any:
    """The plugin opened on an empty session: it adds exactly one job-order key and nothing else."""
    ssn = Session(take_snapshot(cluster(), "kai-scheduler", T0), SchedulerConfig(), T0)
    GpuJobOrderPlugin(arguments).on_session_open(ssn)
    assert len(ssn.job_order_keys) == 1 and not ssn.task_order_fns and not ssn.node_order_fns
    return ssn.job_order_keys[0]


def _order(arguments: dict[str, Any], left: PodGroupInfo, right: PodGroupInfo) -> int:
    """KAI's JobOrderFn result: -1 when ``left`` goes first, 1 when ``right`` does, 0 on a tie."""
    key = _hook(arguments)
    return (key(left) > key(right)) - (key(left) < key(right))


def test_different_priorities_are_left_to_the_priority_order() -> None:
    jobs = _jobs(("a", "build", 1), ("b", "train", 4))  # TestJobOrderFn_PriorityDiffers_Defers
    assert _order({}, jobs["a"], jobs["b"]) == -1  # higher priority first, whatever the GPUs


def test_equal_priority_prefers_the_larger_job_by_default() -> None:
    jobs = _jobs(("small", "train", 1), ("large", "train", 2))  # ..._SamePriority_PrefersLarger_Default
    assert (_order({}, jobs["large"], jobs["small"]), _order({}, jobs["small"], jobs["large"])) == (-1, 1)


def test_equal_priority_and_gpus_fall_through() -> None:
    jobs = _jobs(("a", "train", 1), ("b", "train", 1))  # ..._SamePriority_SameGPU_FallsThrough
    assert _order({}, jobs["a"], jobs["b"]) == 0


def test_prefer_smaller_puts_the_smaller_job_first() -> None:
    jobs = _jobs(("small", "train", 1), ("large", "train", 2))  # TestJobOrderFn_PreferSmallerMode
    smaller = {"mode": "prefer-smaller"}
    assert (_order(smaller, jobs["small"], jobs["large"]), _order(smaller, jobs["large"], jobs["small"])) == (-1, 1)


def test_an_unknown_mode_is_prefer_larger_with_a_warning() -> None:
    jobs = _jobs(("small", "train", 1), ("large", "train", 2))  # TestNew_UnrecognizedMode_FallsBackToPreferLarger
    assert _order({"mode": "totally-not-a-real-mode"}, jobs["large"], jobs["small"]) == -1
    config = parse_config({"tiers": [{"plugins": [{"name": "gpujoborder", "arguments": {"mode": "biggest"}}]}]})
    assert [str(w) for w in config.warnings] == [
        "scheduler config: field tiers[0].plugins[0].arguments.mode: got 'biggest'; allowed: prefer-larger, "
        "prefer-smaller; prefer-larger is used, as KAI does"
    ]


def test_only_alive_pods_count() -> None:
    jobs = _jobs(("a", "train", 3))
    job = jobs["a"]
    key = _hook({})
    assert key(job) == (-50, -3.0)
    for task in job.tasks.values():
        job.set_status(task, PodStatus.SUCCEEDED)
    assert key(job) == (-50, 0.0)
