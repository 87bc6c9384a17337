"""Jobs ordered across queues: picking some jobs out of the order gives them in the order of a full pop."""

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
