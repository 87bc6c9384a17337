"""preemptionDelay: a pending podgroup may not make others be evicted until it has waited that long since its
creation or since it last lost pods itself, whichever is later; each eviction re-arms the delay."""

from core_builders import T0, cluster, node, pod, podgroup, queue

from kai.cluster.memory import MemoryCluster
from kai.components.scheduler.loop import SchedulerLoop
from kai.core.config import parse_config
from kai.core.cycle import run_cycle
from kai.core.framework.config import SchedulerConfig
from kai.core.model.meta import format_time
from kai.core.state.cluster_state import ClusterState
from kai.core.state.snapshot import take_snapshot

CONFIG: SchedulerConfig = parse_config({"actions": "allocate, preempt"})
DELAY = 600.0


def _preemption(preemptor_annotations: dict[str, str]) -> ClusterState:
    """One GPU, held by a train job; a build job of the same queue, created at T0, asks for it with a 10m delay."""
    return cluster(
        ("Queue", queue("root")),
        ("Queue", queue("q", parent="root")),
        ("Node", node("n0", 1)),
        ("PodGroup", podgroup("victim", "q", T0 - 3600, minMember=1)),
        ("Pod", pod("victim-0", "victim", node_name="n0")),
        (
            "PodGroup",
            podgroup(
                "preemptor",
                "q",
                T0,
                minMember=1,
                priority_class="build",
                preemptionDelay="10m",
                annotations=preemptor_annotations,
            ),
        ),
        ("Pod", pod("preemptor-0", "preemptor")),
    )


def _evictions(state: ClusterState, now: float) -> list[str]:
    result = run_cycle(take_snapshot(state, CONFIG.scheduler_name, now), CONFIG, now).result
    return [eviction.pod_key for eviction in result.evictions]


def test_delay_counts_from_creation() -> None:
    state = _preemption({})
    assert _evictions(state, T0 + DELAY - 1) == []
    assert _evictions(state, T0 + DELAY) == ["default/victim-0"]


def test_the_fit_error_says_until_when() -> None:
    state = _preemption({})
    session = run_cycle(take_snapshot(state, CONFIG.scheduler_name, T0 + 60), CONFIG, T0 + 60)
    waiting = session.result.unschedulable["default/preemptor"]
    assert waiting.detailed_message.endswith(
        "\nWorkload is within its preemption delay window (10m0s) and may not trigger evictions before "
        "2025-01-01T00:10:00Z."
    )


def test_last_eviction_re_arms_the_delay() -> None:
    evicted = T0 + 3000
    state = _preemption({"kai.scheduler/last-eviction-timestamp": format_time(evicted)})
    assert _evictions(state, T0 + DELAY) == []  # the creation-based window is over, but it lost pods since
    assert _evictions(state, evicted + DELAY - 1) == []
    assert _evictions(state, evicted + DELAY) == ["default/victim-0"]


def test_an_eviction_older_than_creation_does_not_extend_it() -> None:
    state = _preemption({"kai.scheduler/last-eviction-timestamp": format_time(T0 - 3000)})
    assert _evictions(state, T0 + DELAY) == ["default/victim-0"]


def test_evicting_a_podgroup_records_when() -> None:
    """The victim's podgroup gets the eviction time, which is what re-arms its own delay in later cycles."""
    state = _preemption({})
    now = T0 + DELAY
    result = run_cycle(take_snapshot(state, CONFIG.scheduler_name, now), CONFIG, now).result
    assert result.last_eviction == {"default/victim": now}


def test_plain_allocation_ignores_the_delay() -> None:
    state = _preemption({})
    state.apply("Node", node("n1", 1))
    result = run_cycle(take_snapshot(state, CONFIG.scheduler_name, T0), CONFIG, T0).result
    assert [bind.pod_key for bind in result.binds] == ["default/preemptor-0"]


def test_the_scheduler_records_the_eviction_on_the_podgroup_and_re_arms_its_delay() -> None:
    """Through the real scheduler loop and writer: the victim's PodGroup gets kai.scheduler/last-eviction-timestamp,
    and the next snapshot counts the victim's own 10m delay from that moment."""
    now = T0 + DELAY
    objects = [
        ("Queue", queue("root")),
        ("Queue", queue("q", parent="root")),
        ("Node", node("n0", 1)),
        ("PodGroup", podgroup("victim", "q", T0 - 3600, minMember=1, preemptionDelay="10m")),
        ("Pod", pod("victim-0", "victim", node_name="n0")),
        ("PodGroup", podgroup("preemptor", "q", T0, minMember=1, priority_class="build")),
        ("Pod", pod("preemptor-0", "preemptor")),
        ("PriorityClass", {"metadata": {"name": "train"}, "value": 50}),
        ("PriorityClass", {"metadata": {"name": "build"}, "value": 100}),
    ]
    memory = MemoryCluster([{"kind": kind, **raw} for kind, raw in objects])
    loop = SchedulerLoop(memory, CONFIG, clock=lambda: now)
    assert [e.pod_key for e in loop.run_once().result.evictions] == ["default/victim-0"]
    victim = memory.get("PodGroup", "default/victim")
    assert victim is not None
    assert victim["metadata"]["annotations"]["kai.scheduler/last-eviction-timestamp"] == format_time(now)
    assert loop.state.podgroups["default/victim"].last_eviction_ts == now
    job = take_snapshot(loop.state, CONFIG.scheduler_name, now).jobs["default/victim"]
    assert job.preemption_delay_end() == now + DELAY
