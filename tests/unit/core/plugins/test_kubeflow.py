"""kubeflow: a training job's master or launcher pod is placed before its workers."""

import pytest
from core_builders import T0, pod, podgroup
from plugin_support import bare_session, labelled, opened, task

from kai.core.plugins.kubeflow import KubeflowPlugin

ROLE = "training.kubeflow.org/job-role"


def _job(role: str) -> tuple[tuple[str, dict], ...]:
    return (
        ("PodGroup", podgroup("mpi", "q", T0, minMember=3)),
        ("Pod", labelled(pod("mpi-worker-0", "mpi"), {ROLE: "worker"})),
        ("Pod", labelled(pod("mpi-leader", "mpi"), {ROLE: role})),
        ("Pod", pod("mpi-worker-1", "mpi")),
    )


@pytest.mark.parametrize("role", ["master", "launcher"])
def test_the_leader_is_placed_first(role: str) -> None:
    ssn = opened(KubeflowPlugin(), *_job(role))
    tasks = [task(ssn, name) for name in ("mpi-worker-0", "mpi-worker-1", "mpi-leader")]
    assert next(t.name for t in ssn.ordered_tasks(tasks)) == "mpi-leader"


def test_another_role_is_no_leader_and_without_the_plugin_pods_keep_the_fallback_order() -> None:
    ssn = opened(KubeflowPlugin(), *_job("evaluator"))
    (hook,) = ssn.task_order_fns
    assert hook(task(ssn, "mpi-worker-0"), task(ssn, "mpi-leader")) == 0
    plain = bare_session(*_job("master"))
    assert plain.task_order_fns == []
    tasks = [task(plain, name) for name in ("mpi-leader", "mpi-worker-1", "mpi-worker-0")]
    assert [t.name for t in plain.ordered_tasks(tasks)] == ["mpi-leader", "mpi-worker-0", "mpi-worker-1"]
