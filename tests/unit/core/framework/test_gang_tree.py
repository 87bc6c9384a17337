"""Elastic gang trees (minSubGroup): which pods a podgroup asks for next, which it gives up first, when it is ready."""

from collections.abc import Callable

from core_builders import T0, cluster, node, pod, podgroup, queue

from kai.core.cycle import open_session
from kai.core.framework.config import SchedulerConfig
from kai.core.framework.job_allocation import tasks_to_allocate
from kai.core.framework.session import Session
from kai.core.framework.victims import victims
from kai.core.framework.victims.victims import tasks_to_evict
from kai.core.state.podgroup_info import PodGroupInfo
from kai.core.state.snapshot import take_snapshot
from kai.core.state.task import TaskInfo

TREE = [
    {"name": "group-a", "minSubGroup": 1},
    {"name": "group-b"},
    {"name": "a1", "minMember": 2, "parent": "group-a"},
    {"name": "a2", "minMember": 1, "parent": "group-a"},
    {"name": "b1", "minMember": 1, "parent": "group-b"},
    {"name": "b2", "minMember": 0, "parent": "group-b"},
]
"""Root needs one of its two groups; group-a needs one of a1 (2 pods) / a2 (1 pod); group-b needs both b1 and b2,
and b2 is optional inside (gang size 0)."""


def _session(placed: dict[str, str]) -> tuple[Session, PodGroupInfo]:
    pods = {"a1": 3, "a2": 1, "b1": 1, "b2": 2}
    objects = [
        ("Queue", queue("root")),
        ("Queue", queue("q", parent="root")),
        ("Node", node("n0", 16)),
        ("PodGroup", podgroup("job", "q", T0, minSubGroup=1, subGroups=TREE)),
    ]
    for subgroup, count in pods.items():
        for i in range(count):
            name = f"{subgroup}-{i}"
            objects.append(("Pod", pod(name, "job", node_name=placed.get(name, ""), subgroup=subgroup)))
    ssn = open_session(take_snapshot(cluster(*objects), "kai-scheduler", T0), SchedulerConfig(), T0)
    return ssn, ssn.jobs["default/job"]


def _names(tasks: list[TaskInfo]) -> list[str]:
    return sorted(task.name for task in tasks)


def test_gang_sizes_of_the_tree() -> None:
    _, job = _session({})
    assert job.root.members_to_satisfy == 1
    group_a, group_b = job.root.children
    assert (group_a.members_to_satisfy, group_b.members_to_satisfy) == (1, 2)
    assert job.pod_sets["b2"].min_available == 0
    assert job.pod_sets["b2"].is_min_satisfied()  # nothing required
    assert job.is_ready_for_scheduling()


def test_an_unsatisfied_tree_asks_only_for_its_cheapest_gang() -> None:
    """Root needs one group; group-a (first by name) needs one member: a1 by name, with its 2 pods."""
    ssn, job = _session({})
    assert _names(tasks_to_allocate(ssn, job, True)) == ["a1-0", "a1-1"]


def test_a_satisfied_tree_grows_one_member_at_a_time() -> None:
    """group-a satisfied through a1: the root is satisfied, so the next member below its gang comes first (group-b,
    which needs b1; b2 is optional and skipped in that gang phase)."""
    ssn, job = _session({"a1-0": "n0", "a1-1": "n0"})
    assert job.root.is_min_satisfied()
    assert _names(tasks_to_allocate(ssn, job, True)) == ["b1-0"]


def test_a_fully_satisfied_tree_grows_one_pod() -> None:
    placed = {"a1-0": "n0", "a1-1": "n0", "a2-0": "n0", "b1-0": "n0", "b2-0": "n0", "b2-1": "n0"}
    ssn, job = _session(placed)
    assert _names(tasks_to_allocate(ssn, job, True)) == ["a1-2"]


def test_eviction_takes_surplus_before_gangs() -> None:
    """Everything placed: group-a is the fuller group (2 of 1 members) and a1 the fuller pod set in it (3 of 2), so
    a1's last pod goes first; the podgroup keeps running."""
    every = {f"{s}-{i}": "n0" for s, n in {"a1": 3, "a2": 1, "b1": 1, "b2": 2}.items() for i in range(n)}
    ssn, job = _session(every)
    tasks, more = tasks_to_evict(ssn, job)
    assert _names(tasks) == ["a1-2"] and more


def test_eviction_drops_a_whole_surplus_member() -> None:
    """Both groups satisfied but the root needs only one, and no pod set has pods beyond its gang: a whole group
    goes (equally full, so the last by name: group-b)."""
    placed = {"a1-0": "n0", "a1-1": "n0", "b1-0": "n0"}
    ssn, job = _session(placed)
    tasks, more = tasks_to_evict(ssn, job)
    assert _names(tasks) == ["b1-0"] and more


def test_eviction_of_a_gang_at_its_minimum_takes_everything() -> None:
    ssn, job = _session({"a1-0": "n0", "a1-1": "n0"})
    tasks, more = tasks_to_evict(ssn, job)
    assert _names(tasks) == ["a1-0", "a1-1"] and not more


def _readiness(y_min_member: int) -> bool:
    objects = [
        ("Queue", queue("root")),
        ("Queue", queue("q", parent="root")),
        ("Node", node("n0", 4)),
        (
            "PodGroup",
            podgroup(
                "job",
                "q",
                T0,
                minSubGroup=2,
                subGroups=[{"name": "x", "minMember": 2}, {"name": "y", "minMember": y_min_member}],
            ),
        ),
        ("Pod", pod("x-0", "job", subgroup="x")),
        ("Pod", pod("x-1", "job", subgroup="x")),
    ]
    ssn = open_session(take_snapshot(cluster(*objects), "kai-scheduler", T0), SchedulerConfig(), T0)
    return ssn.jobs["default/job"].is_ready_for_scheduling()


def test_not_ready_until_enough_members_can_run() -> None:
    """The root needs both x and y; y has no pods, so the podgroup can start only if y needs none (KAI's
    IsReadyForScheduling over the tree)."""
    assert _readiness(0)
    assert not _readiness(1)


def test_podgroup_min_member_is_optional_and_zero_means_no_gang() -> None:
    """spec.minMember may be absent (a gang of 1) or 0 (no gang: KAI's main since #1989; v0.17 counted it as 1)."""
    for spec, gang in (({}, 1), ({"minMember": 0}, 0)):
        objects = [
            ("Queue", queue("root")),
            ("Queue", queue("q", parent="root")),
            ("Node", node("n0", 1)),
            ("PodGroup", podgroup("job", "q", T0, **spec)),
            ("Pod", pod("job-0", "job")),
        ]
        ssn = open_session(take_snapshot(cluster(*objects), "kai-scheduler", T0), SchedulerConfig(), T0)
        job = ssn.jobs["default/job"]
        assert job.pod_sets["default"].min_available == gang
        assert _names(tasks_to_allocate(ssn, job, True)) == ["job-0"]


def _reversed(ssn: Session) -> Callable[[TaskInfo, TaskInfo], int]:
    def reverse(left: TaskInfo, right: TaskInfo) -> int:
        return ssn.task_cmp(right, left)

    return reverse


def test_eviction_of_one_pod_set_decides_as_the_tree_walk() -> None:
    """A job that is one pod set takes a shortcut; on every gang size and number of running pods it picks what the
    general walk of the gang tree picks."""
    for min_member in range(4):
        for running in range(5):
            objects = [("Queue", queue("q")), ("Node", node("n0", 16))]
            objects.append(("PodGroup", podgroup("job", "q", T0, minMember=min_member)))
            for i in range(4):
                objects.append(("Pod", pod(f"p-{i}", "job", node_name="n0" if i < running else "")))
            ssn = open_session(take_snapshot(cluster(*objects), "kai-scheduler", T0), SchedulerConfig(), T0)
            job = ssn.jobs["default/job"]

            reverse = _reversed(ssn)
            walked = victims._elastic_from_set(ssn, job.root, reverse) or victims._running(
                job.root.all_pod_sets(), reverse
            )
            tasks, more = tasks_to_evict(ssn, job)
            assert [t.key for t in tasks] == [t.key for t in walked], (min_member, running)
            assert more is (len(walked) < running), (min_member, running)
