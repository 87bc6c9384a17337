"""preempt: a job of higher priority takes the GPUs of a preemptible job of its own queue."""

from action_support import run_action
from core_builders import T0, node, pod, podgroup, queue

from kai.core.actions import preempt

PLUGINS = {
    "tiers": [
        {"plugins": [{"name": n} for n in ("predicates", "proportion", "priority", "elastic", "sg-nodelocalgreedy")]}
    ]
}
QUEUES = (("Queue", queue("root")), ("Queue", queue("q", parent="root")))


def test_a_build_job_preempts_a_train_job_of_its_queue() -> None:
    result = run_action(
        preempt.NAME,
        *QUEUES,
        ("Node", node("n1", 1)),
        ("PodGroup", podgroup("train", "q", T0 - 600)),
        ("Pod", pod("train-0", "train", node_name="n1")),
        ("PodGroup", podgroup("build", "q", T0, priority_class="build")),
        ("Pod", pod("build-0", "build")),
        **PLUGINS,
    )
    assert [e.pod_key for e in result.evictions] == ["default/train-0"]
    assert [p.pod_key for p in result.pipelined] == ["default/build-0"]
    assert result.evictions[0].message.endswith("was preempted by higher priority workload default/build")


def test_a_job_of_the_same_priority_preempts_nothing() -> None:
    result = run_action(
        preempt.NAME,
        *QUEUES,
        ("Node", node("n1", 1)),
        ("PodGroup", podgroup("first", "q", T0 - 600)),
        ("Pod", pod("first-0", "first", node_name="n1")),
        ("PodGroup", podgroup("second", "q", T0)),
        ("Pod", pod("second-0", "second")),
        **PLUGINS,
    )
    assert result.evictions == []
