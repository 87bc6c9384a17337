"""The cluster state skips a bad object and reports it, keeping the others."""

from kai.core.state.cluster_state import ClusterState


def test_bad_object_is_skipped_and_reported_others_kept() -> None:
    state = ClusterState()
    assert state.apply("Queue", {"metadata": {"name": "good"}, "spec": {}}) is None
    error = state.apply("Queue", {"metadata": {"name": "bad"}, "spec": {"priority": "high"}})
    assert error is not None and "Queue bad: field spec.priority" in str(error)
    assert list(state.queues) == ["good"]
    assert ("Queue", "bad") in state.invalid
