"""Jobs ordered across queues: some jobs picked out of the order, or a copy of the queue, come in the order of a
full pop."""

import itertools
import random
from dataclasses import replace
from typing import Any

from core_builders import T0, cluster, node, pod, podgroup, queue

from kai.core.config import parse_config
from kai.core.cycle import open_session
from kai.core.framework.config import SchedulerConfig
from kai.core.framework.eviction import may_lose_pods
from kai.core.framework.queueing.job_index import JobIndex
from kai.core.framework.queueing.job_queue import JobQueueOptions, JobsOrderByQueues
from kai.core.framework.session import Session
from kai.core.framework.statement import Statement
from kai.core.state.pod_status import ACTIVE_ALLOCATED, PodStatus
from kai.core.state.podgroup_info import PodGroupInfo
from kai.core.state.queue_info import QueueInfo
from kai.core.state.snapshot import take_snapshot

SEED, SESSIONS = 1, 12
"""The index test's random sessions."""
JOBS = {"a0": "qa", "a1": "qa", "a2": "qa", "b0": "qb", "b1": "qb", "c0": "qc"}


def _session() -> Session:
    objects = [("Queue", queue("root")), ("Node", node("n0", 8))]
    objects += [
        ("Queue", queue(name, parent="root", gpu_quota=quota)) for name, quota in (("qa", 1), ("qb", 4), ("qc", 0))
    ]
    for i, (name, queue_name) in enumerate(JOBS.items()):
        objects.append(("PodGroup", podgroup(name, queue_name, T0 - 60 * i, minMember=1)))
        objects.append(("Pod", pod(f"{name}-0", name, gpus=1 + i % 2)))
    return open_session(take_snapshot(cluster(*objects), "kai-scheduler", T0), SchedulerConfig(), T0)


def _queue(ssn: Session) -> JobsOrderByQueues:
    jobs = JobsOrderByQueues(ssn, JobQueueOptions())
    jobs.initialize(ssn.jobs)
    return jobs


def test_ordered_jobs_come_in_full_pop_order() -> None:
    ssn = _session()
    full_queue = _queue(ssn)
    full = [job.key for job in iter(full_queue.pop, None)]
    assert sorted(full) == sorted(f"default/{name}" for name in JOBS)
    for size in range(len(full) + 1):
        for wanted in itertools.combinations(full, size):
            picked = [job.key for job in _queue(ssn).ordered([ssn.jobs[key] for key in wanted])]
            assert picked == [key for key in full if key in wanted]


def test_a_copy_pops_on_its_own_in_the_same_order() -> None:
    ssn = _session()
    for options in (JobQueueOptions(), JobQueueOptions(victim_queue=True)):
        original = JobsOrderByQueues(ssn, options)
        original.initialize(ssn.jobs)
        first = original.pop()
        twin = original.copy()
        copied = [job.key for job in iter(twin.pop, None)]
        assert twin.empty() and not original.empty()
        assert [job.key for job in iter(original.pop, None)] == copied
        assert first is not None and first.key not in copied and len(copied) == len(JOBS) - 1


def _random_session(draw: random.Random) -> Session:
    """Random queue trees (leaves at the top and one or two levels down, some without quota) with jobs of two
    priorities, equal creation times and some running pods."""
    objects: list[tuple[str, dict[str, Any]]] = [("Node", node("n0", 64))]
    leaves: list[str] = []
    for top in range(draw.randint(1, 3)):
        name = f"top{top}"
        objects.append(("Queue", queue(name, gpu_quota=draw.choice([-1, 0, 2, 4, 16]))))
        children = draw.choice([0, 2, 3, 5])
        if not children:
            leaves.append(name)
        for child in range(children):
            child_name = f"{name}-{child}"
            objects.append(("Queue", queue(child_name, parent=name, gpu_quota=draw.choice([-1, 0, 1, 2, 3, 8]))))
            if draw.random() < 0.3:
                for grandchild in range(2):
                    leaf = f"{child_name}-{grandchild}"
                    objects.append(("Queue", queue(leaf, parent=child_name, gpu_quota=draw.choice([-1, 0, 2]))))
                    leaves.append(leaf)
            else:
                leaves.append(child_name)
    for i in range(draw.randint(1, 60)):
        name = f"job{i}"
        size = draw.randint(1, 4)
        created = T0 - 60 * draw.randint(0, 5)
        group = podgroup(name, draw.choice(leaves), created, minMember=draw.randint(1, size))
        group["spec"]["priorityClassName"] = draw.choice(["train", "build"])
        objects.append(("PodGroup", group))
        for p in range(size):
            running = draw.random() < 0.5
            objects.append(
                ("Pod", pod(f"{name}-{p}", name, gpus=draw.choice([1, 2, 4, 8]), node_name="n0" if running else ""))
            )
    config = parse_config({"tiers": [{"plugins": [{"name": n} for n in ("proportion", "priority", "elastic")]}]})
    return open_session(take_snapshot(cluster(*objects), "kai-scheduler", T0), config, T0)


def _pop_alike(ssn: Session, queue: JobsOrderByQueues, twin: JobsOrderByQueues) -> None:
    """Both queues pop the same jobs, with the queue shares changed after each pop (victims given back, pending
    jobs charged) so that the heaps' shapes can tell; the shares are restored after."""
    victims = queue.options.victim_queue
    charged = []
    while True:
        job = queue.pop()
        assert job is twin.pop()
        if job is None:
            break
        for task in job.tasks.values():
            ssn.deallocated(task) if victims else ssn.allocated(task)
            charged.append(task)
    for task in charged:
        ssn.allocated(task) if victims else ssn.deallocated(task)


def test_a_built_queue_pops_as_one_pushed_job_by_job() -> None:
    """Leaves built by one sort and the inner heaps by replaying the links pop exactly as Go's heaps filled one
    push at a time (a depth limit no queue reaches keeps those), with the queue shares changing between pops."""
    draw = random.Random(5)
    for _ in range(100):  # a heap's shape decides a pop rarely: a display kept wrong fails 3 of these
        ssn = _random_session(draw)
        for options in (
            JobQueueOptions(filter_non_pending=True),
            JobQueueOptions(filter_non_active_allocated=True, victim_queue=True),
        ):
            built, pushed = (
                JobsOrderByQueues(ssn, options),
                JobsOrderByQueues(ssn, replace(options, max_jobs_queue_depth=10**6)),
            )
            built.initialize(ssn.jobs)
            pushed.initialize(ssn.jobs)
            _pop_alike(ssn, built, pushed)


def _commit_at_random(ssn: Session, draw: random.Random) -> None:
    """A commit that places some pending pods and evicts some placed ones (so jobs come and go and re-key)."""
    statement = Statement(ssn)
    for job in draw.sample(list(ssn.jobs.values()), k=min(3, len(ssn.jobs))):
        for task in job.tasks.values():
            if task.status is PodStatus.PENDING and draw.random() < 0.5:
                statement.pipeline(task, "n0")
            elif task.status in ACTIVE_ALLOCATED and draw.random() < 0.5:
                statement.evict(task, "")
    statement.commit("test")


def test_a_queue_from_an_index_pops_as_one_built_from_the_jobs() -> None:
    """An index kept across commits makes the queue a plain build over its members in session order makes: all of
    them, or one leaf's above a first key, or with a leaf left out, some jobs left out, or a representative in its
    job's place. (A leaf showing its best job overall instead of its best so far when the next leaf is linked fails
    one of these sessions.)"""
    draw = random.Random(SEED)
    kinds = ((PodGroupInfo.has_pending, JobQueueOptions()), (may_lose_pods, JobQueueOptions(victim_queue=True)))
    for _ in range(SESSIONS):
        ssn = _random_session(draw)
        indexes = [(JobIndex(ssn, member, options.victim_queue), member, options) for member, options in kinds]
        for _ in range(6):
            _commit_at_random(ssn, draw)
            for index, member, options in indexes:
                index.sync()
                members = {job.key: job for job in ssn.jobs.values() if member(job)}
                plain = JobsOrderByQueues(ssn, options)
                plain.initialize(members)
                _pop_alike(ssn, index.queue(options), plain)
                _pop_alike(ssn, *_variant(ssn, draw, index, members, options))


def _variant(
    ssn: Session, draw: random.Random, index: JobIndex, members: dict[str, PodGroupInfo], options: JobQueueOptions
) -> tuple[JobsOrderByQueues, JobsOrderByQueues]:
    """A queue from the index of one leaf, or without some leaves and jobs, or with a representative, and the plain
    build's."""
    plain = JobsOrderByQueues(ssn, options)
    if members and draw.random() < 0.3:  # one leaf, its jobs of a lower priority (the order's first key) but some
        leaf = draw.choice([job.queue for job in members.values()])
        above = draw.choice([-100, -50, 0])
        skip = {key for key in members if draw.random() < 0.2}
        kept = {k: j for k, j in members.items() if j.queue == leaf and k not in skip and -j.priority > above}
        plain.initialize(kept)
        return index.leaf_queue(options, leaf, skip, above), plain
    if members and draw.random() < 0.5:
        real = draw.choice(list(members.values()))
        stand_in = real.clone_with_tasks(list(real.tasks.values()))
        plain.initialize({key: stand_in if job is real else job for key, job in members.items()})
        return index.queue(options, substitute=stand_in), plain
    leaves = sorted({job.queue for job in members.values()})
    skip_queues = {leaf for leaf in leaves if draw.random() < 0.3}
    skip_jobs = {key for key in members if draw.random() < 0.2}
    plain.initialize({k: j for k, j in members.items() if j.queue not in skip_queues and k not in skip_jobs})
    return index.queue(options, skip_queues, skip_jobs), plain


class _AskingEveryTime(JobsOrderByQueues):
    """Asks queue order at every comparison, remembering none."""

    def _remembered_less(
        self, left: QueueInfo, right: QueueInfo, left_job: PodGroupInfo, right_job: PodGroupInfo
    ) -> bool:
        return self.ssn.queue_less(left, right, left_job, right_job, [], [])


def test_remembered_comparisons_pop_as_comparisons_asked_every_time() -> None:
    """A queue remembers how two queues showing two jobs compare until the next allocation: with pods of any job
    charged to their queues after some pops and not others (queues change under the jobs they show), it pops what
    a queue asking every time pops."""
    draw = random.Random(7)
    for _ in range(60):
        ssn = _random_session(draw)
        options = JobQueueOptions(filter_non_pending=True)
        remembering, asking = JobsOrderByQueues(ssn, options), _AskingEveryTime(ssn, options)
        remembering.initialize(ssn.jobs)
        asking.initialize(ssn.jobs)
        tasks = [task for job in ssn.jobs.values() for task in job.tasks.values()]
        charged = []
        while (job := remembering.pop()) is not None:
            assert job is asking.pop()
            if draw.random() < 0.4:
                for task in draw.sample(tasks, k=min(3, len(tasks))):
                    ssn.allocated(task)
                    charged.append(task)
        assert asking.pop() is None
        for task in charged:
            ssn.deallocated(task)
