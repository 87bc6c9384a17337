"""Jobs ordered across queues: some jobs picked out of the order, or a copy of the queue, come in the order of a
full pop."""

import itertools

from core_builders import T0, cluster, node, pod, podgroup, queue

from kai.core.cycle import open_session
from kai.core.framework.config import SchedulerConfig
from kai.core.framework.job_queue import JobQueueOptions, JobsOrderByQueues
from kai.core.framework.session import Session
from kai.core.state.snapshot import take_snapshot

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
            picked = [job.key for job in _queue(ssn).ordered(set(wanted))]
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
