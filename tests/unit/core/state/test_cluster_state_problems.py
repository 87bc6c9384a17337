"""Reference problems follow the objects as they change, in any event order (a real cluster's watches are not
ordered across kinds): a queue whose parent arrives later becomes usable, a pod whose PodGroup arrives later is
no longer reported, and a deletion brings the problem back."""

from kai.core.state.cluster_state import ClusterState
from kai.core.state.snapshot import take_snapshot


def _queue(name: str, parent: str = "") -> dict[str, object]:
    return {"metadata": {"name": name}, "spec": {"parentQueue": parent}}


def _pod(name: str, podgroup: str) -> dict[str, object]:
    return {
        "metadata": {"name": name, "namespace": "ns", "annotations": {"pod-group-name": podgroup}},
        "spec": {"schedulerName": "kai-scheduler", "containers": [{"name": "c"}]},
    }


def test_queue_problems_clear_when_the_parent_arrives_and_return_when_it_goes() -> None:
    state = ClusterState()
    state.apply("Queue", _queue("leaf", "dept"))
    state.apply("Queue", _queue("sub", "leaf"))
    assert (
        str(state.invalid[("Queue", "leaf")])
        == "Queue leaf: field spec.parentQueue: parent queue 'dept' does not exist"
    )
    assert ("Queue", "sub") in state.invalid and "leaf" in state.queues, "the queue is kept, only not usable"
    state.apply("Queue", _queue("dept"))
    assert not state.invalid and not state.unusable_queues
    assert sorted(take_snapshot(state, "kai-scheduler").queues) == ["dept", "leaf", "sub"]
    state.apply("Queue", _queue("dept"), deleted=True)
    assert set(state.unusable_queues) == {"leaf", "sub"}
    assert take_snapshot(state, "kai-scheduler").queues == {}


def test_a_queue_under_an_unparsable_parent_says_so() -> None:
    state = ClusterState()
    state.apply("Queue", {"metadata": {"name": "dept"}, "spec": {"priority": "high"}})
    state.apply("Queue", _queue("leaf", "dept"))
    assert state.invalid[("Queue", "leaf")].problem == "parent queue 'dept' is invalid (see its own error)"
    assert "spec.priority" in str(state.invalid[("Queue", "dept")])
    state.apply("Queue", _queue("dept"))
    assert not state.invalid


def test_pod_problem_follows_its_podgroup() -> None:
    state = ClusterState()
    state.apply("Pod", _pod("p", "g"))
    assert state.invalid[("Pod", "ns/p")].problem.startswith("PodGroup 'g' does not exist in namespace ns")
    assert "ns/p" in state.pods, "the pod is kept: it may hold a node"
    state.apply("PodGroup", {"metadata": {"name": "g", "namespace": "ns"}, "spec": {"queue": "q"}})
    assert not state.invalid
    state.apply("PodGroup", {"metadata": {"name": "g", "namespace": "ns"}, "spec": {"minMember": "two"}})
    assert state.invalid[("Pod", "ns/p")].problem.startswith("PodGroup 'g' is invalid (see its own error)")
    state.apply("Pod", _pod("p", "other"))
    state.apply("PodGroup", {"metadata": {"name": "g", "namespace": "ns"}}, deleted=True)
    assert state.invalid[("Pod", "ns/p")].problem.startswith("PodGroup 'other' does not exist")
    state.apply("Pod", _pod("p", "other"), deleted=True)
    assert not state.invalid


def test_warnings_are_replaced_on_update_and_dropped_on_delete() -> None:
    state = ClusterState()
    weights = {"gpu": {"quota": 1, "limit": -1, "overQuotaWeight": -1}}
    state.apply("Queue", {"metadata": {"name": "q"}, "spec": {"resources": weights}})
    [warning] = state.warnings[("Queue", "q")]
    assert warning.field == "spec.resources.gpu.overQuotaWeight" and "q" in state.queues
    state.apply("Queue", {"metadata": {"name": "q"}, "spec": {}})
    assert not state.warnings
    state.apply("Queue", {"metadata": {"name": "q"}, "spec": {"resources": weights}})
    state.apply("Queue", {"metadata": {"name": "q"}}, deleted=True)
    assert not state.warnings


def test_a_status_update_keeps_the_queue_problem_and_a_parse_error_replaces_it() -> None:
    state = ClusterState()
    state.apply("Queue", _queue("leaf", "dept"))
    problem = state.invalid[("Queue", "leaf")]
    state.apply("Queue", {**_queue("leaf", "dept"), "status": {"allocated": {"cpu": "1"}}})
    assert state.invalid[("Queue", "leaf")] is problem, "unchanged: the same problem, not a new one"
    state.apply("Queue", {"metadata": {"name": "leaf"}, "spec": {"parentQueue": "dept", "priority": "high"}})
    assert state.invalid[("Queue", "leaf")].field == "spec.priority"
    state.apply("Queue", _queue("leaf"))
    assert not state.invalid


def test_the_pods_of_another_schedulers_podgroup_are_not_reported() -> None:
    """A shard's scheduler keeps another node pool's PodGroup out (``elsewhere``): its pods are that scheduler's,
    not pods naming a PodGroup that does not exist. Deleted for real, the PodGroup is missing again."""
    state = ClusterState()
    podgroup = {"metadata": {"name": "pg", "namespace": "ns"}, "spec": {"queue": "q"}}
    state.apply("PodGroup", podgroup, elsewhere=True)
    state.apply("Pod", _pod("p", "pg"))
    assert not state.invalid and "ns/pg" not in state.podgroups
    assert take_snapshot(state, "kai-scheduler").jobs == {}
    state.apply("PodGroup", podgroup, deleted=True)
    assert ("Pod", "ns/p") in state.invalid
    state.apply("PodGroup", podgroup)
    assert not state.invalid and "ns/pg" in state.podgroups
