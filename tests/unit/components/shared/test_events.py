"""The event recorder on the in-memory cluster: identity, aggregation of repeats and similar events, the spam
filter and the bounded LRU (client-go's tools/record rules, kai.components.shared.events)."""

from typing import Any

import pytest

from kai.cluster.memory import MemoryCluster
from kai.components.shared import events as events_module
from kai.components.shared.events import COMBINED_PREFIX, EventRecorder, ObjectRef
from kai.components.shared.parallel import Writes


class Clock:
    def __init__(self) -> None:
        self.now = 1_767_225_600.0

    def __call__(self) -> float:
        return self.now


POD = ObjectRef("v1", "Pod", "ml", "train-0", "uid-1")
QUEUE = ObjectRef("scheduling.run.ai/v2", "Queue", "", "team-a", "uid-q")


def events(cluster: MemoryCluster) -> list[dict[str, Any]]:
    return sorted(cluster.list("Event"), key=lambda e: e["metadata"]["name"])


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def cluster() -> MemoryCluster:
    return MemoryCluster()


def test_an_event_names_its_object_with_uid_and_its_source(cluster: MemoryCluster, clock: Clock) -> None:
    pod = {
        "apiVersion": "v1",
        "metadata": {"name": "train-0", "namespace": "ml", "uid": "uid-1", "resourceVersion": "7"},
    }
    EventRecorder(cluster, "kai-scheduler", clock).record(
        ObjectRef.of("Pod", pod), "Warning", "Unschedulable", "no nodes"
    )
    [event] = events(cluster)
    assert event["involvedObject"] == {
        "apiVersion": "v1",
        "kind": "Pod",
        "name": "train-0",
        "namespace": "ml",
        "uid": "uid-1",
    }
    assert event["metadata"]["namespace"] == "ml"
    assert event["metadata"]["name"].startswith("train-0.")
    assert (event["type"], event["reason"], event["message"], event["count"]) == (
        "Warning",
        "Unschedulable",
        "no nodes",
        1,
    )
    assert event["source"] == {"component": "kai-scheduler"}
    assert event["firstTimestamp"] == event["lastTimestamp"] == "2026-01-01T00:00:00Z"


def test_events_of_cluster_scoped_objects_go_to_default(cluster: MemoryCluster, clock: Clock) -> None:
    EventRecorder(cluster, "kai-scheduler", clock).record(QUEUE, "Warning", "InvalidObject", "bad")
    [event] = events(cluster)
    assert event["metadata"]["namespace"] == "default"
    assert "namespace" not in event["involvedObject"]


def test_repeats_count_on_one_event_written_at_most_once_per_refresh(cluster: MemoryCluster, clock: Clock) -> None:
    recorder = EventRecorder(cluster, "kai-scheduler", clock, refresh_s=60)
    for _ in range(30):  # one scheduling cycle a second
        recorder.record(POD, "Warning", "Unschedulable", "no nodes")
        clock.now += 1
    [event] = events(cluster)
    assert event["count"] == 1, "repeats within the refresh period stay in memory"
    version = event["metadata"]["resourceVersion"]
    for _ in range(31):
        recorder.record(POD, "Warning", "Unschedulable", "no nodes")
        clock.now += 1
    [event] = events(cluster)
    assert event["count"] == 61
    assert event["metadata"]["resourceVersion"] != version
    assert event["firstTimestamp"] == "2026-01-01T00:00:00Z"
    assert event["lastTimestamp"] == "2026-01-01T00:01:00Z"


def test_flush_writes_the_last_count_once_the_refresh_period_passed(cluster: MemoryCluster, clock: Clock) -> None:
    recorder = EventRecorder(cluster, "kai-scheduler", clock, refresh_s=60)
    recorder.record(POD, "Warning", "Unschedulable", "no nodes")
    clock.now += 5
    recorder.record(POD, "Warning", "Unschedulable", "no nodes")
    recorder.flush()
    assert events(cluster)[0]["count"] == 1
    clock.now += 60
    recorder.flush()
    assert events(cluster)[0]["count"] == 2
    version = events(cluster)[0]["metadata"]["resourceVersion"]
    clock.now += 600
    recorder.flush()
    assert events(cluster)[0]["metadata"]["resourceVersion"] == version, "nothing new: nothing written"


def test_another_object_reason_type_or_uid_is_another_event(cluster: MemoryCluster, clock: Clock) -> None:
    recorder = EventRecorder(cluster, "kai-scheduler", clock)
    recorder.record(POD, "Warning", "Unschedulable", "no nodes")
    recorder.record(POD, "Normal", "Unschedulable", "no nodes")
    recorder.record(POD, "Warning", "Evict", "no nodes")
    recorder.record(ObjectRef("v1", "Pod", "ml", "train-0", "uid-2"), "Warning", "Unschedulable", "no nodes")
    recorder.record(ObjectRef("v1", "Pod", "ml", "train-1", "uid-3"), "Warning", "Unschedulable", "no nodes")
    EventRecorder(cluster, "binder", clock).record(POD, "Warning", "Unschedulable", "no nodes")
    assert len(events(cluster)) == 6


def test_similar_events_are_combined_from_the_tenth_message(cluster: MemoryCluster, clock: Clock) -> None:
    recorder = EventRecorder(cluster, "kai-scheduler", clock)
    for i in range(9):
        recorder.record(POD, "Warning", "Unschedulable", f"0/{i} nodes are available")
    assert len(events(cluster)) == 9
    for i in range(9, 40):
        recorder.record(POD, "Warning", "Unschedulable", f"0/{i} nodes are available")
    combined = [e for e in events(cluster) if e["message"].startswith(COMBINED_PREFIX)]
    assert len(events(cluster)) == 10 and len(combined) == 1
    assert combined[0]["message"] == COMBINED_PREFIX + "0/9 nodes are available"
    clock.now += 61
    recorder.record(POD, "Warning", "Unschedulable", "0/40 nodes are available")
    [combined[0]] = [e for e in events(cluster) if e["message"].startswith(COMBINED_PREFIX)]
    assert combined[0]["message"] == COMBINED_PREFIX + "0/40 nodes are available"
    assert combined[0]["count"] == 32


def test_similar_messages_start_afresh_after_ten_quiet_minutes(cluster: MemoryCluster, clock: Clock) -> None:
    recorder = EventRecorder(cluster, "kai-scheduler", clock)
    for i in range(9):
        recorder.record(POD, "Warning", "Unschedulable", f"m{i}")
    clock.now += 601
    recorder.record(POD, "Warning", "Unschedulable", "m9")
    assert not [e for e in events(cluster) if e["message"].startswith(COMBINED_PREFIX)]


def test_spam_filter_allows_a_burst_of_25_writes_per_object_then_one_per_five_minutes(
    cluster: MemoryCluster, clock: Clock
) -> None:
    recorder = EventRecorder(cluster, "kai-scheduler", clock)
    for i in range(30):
        recorder.record(POD, "Warning", f"Reason{i}", "m")
    assert len(events(cluster)) == 25
    recorder.record(QUEUE, "Warning", "Reason0", "m")
    assert len(events(cluster)) == 26, "another object has its own budget"
    clock.now += 300
    recorder.record(POD, "Warning", "Late", "m")
    recorder.record(POD, "Warning", "Later", "m")
    assert {e["reason"] for e in events(cluster)} >= {"Late"}
    assert "Later" not in {e["reason"] for e in events(cluster)}


def test_memory_is_bounded_by_the_lru(cluster: MemoryCluster, clock: Clock) -> None:
    recorder = EventRecorder(cluster, "kai-scheduler", clock, cache_size=2)
    pods = [ObjectRef("v1", "Pod", "ml", f"p{i}", f"u{i}") for i in range(3)]
    for pod in pods:
        recorder.record(pod, "Warning", "Unschedulable", "no nodes")
    recorder.record(pods[2], "Warning", "Unschedulable", "no nodes")
    assert len(events(cluster)) == 3, "p2 is still cached: its repeat is counted"
    recorder.record(pods[0], "Warning", "Unschedulable", "no nodes")
    assert len(events(cluster)) == 4, "p0 was evicted: its repeat starts a new event"
    assert len(recorder._logged) == 2


def test_a_failed_write_is_forgotten_so_the_next_occurrence_records_anew(cluster: MemoryCluster, clock: Clock) -> None:
    recorder = EventRecorder(cluster, "kai-scheduler", clock, refresh_s=0)
    recorder.record(POD, "Warning", "Unschedulable", "no nodes")
    cluster.finalize("Event", f"ml/{events(cluster)[0]['metadata']['name']}")
    recorder.record(POD, "Warning", "Unschedulable", "no nodes")  # the update finds no event
    recorder.record(POD, "Warning", "Unschedulable", "no nodes")
    [event] = events(cluster)
    assert event["count"] == 1


def test_with_a_write_pool_events_are_written_in_the_background_and_dropped_beyond_the_queue(
    cluster: MemoryCluster, clock: Clock, monkeypatch: pytest.MonkeyPatch
) -> None:
    later: list[tuple[str, Any]] = []

    class Background(Writes):
        def later(self, what: str, item: Any, action: Any) -> None:
            later.append((what, lambda: action(item)))

    monkeypatch.setattr(events_module, "MAX_QUEUED", 2)
    recorder = EventRecorder(cluster, "kai-scheduler", clock, writes=Background())
    for reason in ("One", "Two", "Three"):
        recorder.record(POD, "Normal", reason, "m")
    assert events(cluster) == [] and [what for what, _ in later] == ["event", "event"]  # the third was dropped
    for _, write in later:
        write()
    assert [e["reason"] for e in events(cluster)] == ["One", "Two"]
    later.clear()
    recorder.record(POD, "Normal", "Three", "m")  # dropped, so not counted as written: a new Event
    later[0][1]()
    assert [e["reason"] for e in events(cluster)] == ["One", "Two", "Three"]
