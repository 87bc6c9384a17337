"""ray: a Ray cluster's head pod is placed before its workers."""

from core_builders import T0, pod, podgroup
from plugin_support import bare_session, labelled, opened, task

from kai.core.plugins.ray import RayPlugin

NODE_TYPE = "ray.io/node-type"
JOB = (
    ("PodGroup", podgroup("ray", "q", T0, minMember=3)),
    ("Pod", labelled(pod("ray-worker-0", "ray"), {NODE_TYPE: "worker"})),
    ("Pod", labelled(pod("ray-worker-1", "ray"), {NODE_TYPE: "worker"})),
    ("Pod", labelled(pod("ray-head", "ray"), {NODE_TYPE: "head"})),
)


def test_the_head_is_placed_first() -> None:
    ssn = opened(RayPlugin(), *JOB)
    tasks = [task(ssn, name) for name in ("ray-worker-0", "ray-worker-1", "ray-head")]
    assert next(t.name for t in ssn.ordered_tasks(tasks)) == "ray-head"
    (hook,) = ssn.task_order_fns
    assert hook(task(ssn, "ray-head"), task(ssn, "ray-worker-0")) == -1
    assert hook(task(ssn, "ray-worker-0"), task(ssn, "ray-head")) == 1
    assert hook(task(ssn, "ray-worker-0"), task(ssn, "ray-worker-1")) == 0


def test_without_it_pods_keep_the_fallback_order() -> None:
    ssn = bare_session(*JOB)
    tasks = [task(ssn, name) for name in ("ray-head", "ray-worker-1", "ray-worker-0")]
    assert [t.name for t in ssn.ordered_tasks(tasks)] == ["ray-head", "ray-worker-0", "ray-worker-1"]
