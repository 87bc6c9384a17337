"""In-place pod resize (``pods/resize``, KAI #2021): a pod being resized is charged the larger of its sizes until the
kubelet is done (an Infeasible size never), per container, on its node and its queue."""

import pytest
from core_builders import T0, cluster, node, podgroup, queue
from core_builders import resized_pod as resized

from kai.core.model.errors import InvalidObject
from kai.core.model.objects import parse_pod
from kai.core.model.pod_requests import BEST_EFFORT, BURSTABLE, GUARANTEED
from kai.core.state.resource_index import CPU_ROW
from kai.core.state.snapshot import take_snapshot


@pytest.mark.parametrize(
    ("spec", "running", "allocated", "infeasible", "charged"),
    [
        ("2", None, None, False, 2000),  # the kubelet reports no resources: the spec
        ("4", "2", "2", False, 4000),  # an upsize the kubelet has not enacted yet (pending, deferred, in progress)
        ("1", "2", "2", False, 2000),  # a downsize still in progress: its room is freed once the kubelet is done
        ("2", "2", "3", False, 3000),  # the kubelet allocated more than it runs
        ("8", "2", "2", True, 2000),  # Infeasible: the size the node cannot give is not charged
    ],
)
def test_a_resized_pod_is_charged_its_largest_current_size(spec, running, allocated, infeasible, charged):
    pod = parse_pod(resized(spec, running, allocated, infeasible))
    assert pod.request.milli_cpu == charged


def test_native_sidecars_are_charged_as_resized_and_other_init_containers_as_written():
    raw = resized("1", "1", "1")
    sidecar = {"name": "proxy", "restartPolicy": "Always", "resources": {"requests": {"cpu": "1"}}}
    setup = {"name": "setup", "resources": {"requests": {"cpu": "1"}}}
    raw["spec"]["initContainers"] = [setup, sidecar]
    raw["status"]["initContainerStatuses"] = [
        {"name": "setup", "resources": {"requests": {"cpu": "9"}}},
        {"name": "proxy", "resources": {"requests": {"cpu": "3"}}},
    ]
    assert parse_pod(raw).request.milli_cpu == 4000  # the app's 1 and the sidecar's 3 (its resize in progress)


def test_the_node_and_the_queue_are_charged_the_resized_size():
    """A 4-cpu node with a pod growing from 2 to 3 cpus: a 2-cpu pod no longer fits until the resize is undone."""
    small = {"cpu": "20000", "memory": "20G", "nvidia.com/gpu": "0", "pods": "110"}
    objects = [("Queue", queue("q")), ("Node", {**node("n1", 0), "status": {"allocatable": {**small, "cpu": "4"}}})]
    objects += [("PodGroup", podgroup("web", "q", T0)), ("Pod", resized("3", "2", "2"))]
    table = take_snapshot(cluster(*objects), "kai-scheduler", T0).nodes
    assert table.idle[CPU_ROW, table.by_name["n1"].column] == 1000
    objects[-1] = ("Pod", resized("2", "2", "2"))
    table = take_snapshot(cluster(*objects), "kai-scheduler", T0).nodes
    assert table.idle[CPU_ROW, table.by_name["n1"].column] == 2000


def test_the_qos_class_is_the_one_the_api_server_gives() -> None:
    guaranteed = resized("2")  # requests equal to limits
    burstable = resized("2")
    burstable["spec"]["containers"][0]["resources"].pop("limits")
    best_effort = resized("2")
    best_effort["spec"]["containers"][0]["resources"] = {}
    classes = [parse_pod(raw).qos_class for raw in (guaranteed, burstable, best_effort)]
    assert classes == [GUARANTEED, BURSTABLE, BEST_EFFORT]


@pytest.mark.parametrize(
    ("requests", "limits", "told"),
    [
        ({"nvidia.com/gpu": "1"}, {"nvidia.com/gpu": "2"}, "got 1 with a limit of 2: the request of an extended"),
        ({"cpu": "4"}, {"cpu": "2"}, "got 4000, above its limit of 2000; the API server refuses it"),
    ],
)
def test_a_request_the_api_server_refuses_is_refused(requests, limits, told):
    """A GPU request of 1 with a limit of 2 was accepted (1 GPU charged); the API server refuses such a pod."""
    raw = resized("1", None, None)
    raw["spec"]["containers"][0]["resources"] = {"requests": requests, "limits": limits}
    with pytest.raises(InvalidObject) as error:
        parse_pod(raw)
    assert error.value.field == f"spec.containers[0].resources.requests.{next(iter(requests))}"
    assert told in error.value.problem


def test_requests_equal_to_their_limits_however_written_are_used():
    raw = resized("1", None, None)
    raw["spec"]["containers"][0]["resources"] = {
        "requests": {"nvidia.com/gpu": "1", "memory": "1Gi"},
        "limits": {"nvidia.com/gpu": 1, "memory": "1024Mi"},
    }
    assert parse_pod(raw).request.gpus == 1
