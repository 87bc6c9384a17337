"""The node table's fit masks, kept per request and caught up over the columns that changed, and what each node is
short of, kept per request until the table changes, equal a check of every node, through random evictions,
placements and rollbacks, asked after every change or only now and then."""

import random
from typing import Any

import numpy as np
from core_builders import T0, cluster, node, pod, podgroup, queue

from kai.core.cycle import open_session
from kai.core.framework.config import SchedulerConfig
from kai.core.framework.statement import Statement
from kai.core.state.pod_status import PodStatus
from kai.core.state.snapshot import take_snapshot


def test_cached_fit_masks_equal_a_check_of_every_node() -> None:
    rng = random.Random(4)
    objects: list[tuple[str, dict[str, Any]]] = [("Queue", queue("q"))]
    objects += [("Node", node(f"n{n}", rng.choice((2, 4, 8)))) for n in range(12)]
    for i in range(30):
        placed = f"n{rng.randrange(12)}" if i < 20 else ""
        objects += [("PodGroup", podgroup(f"g{i}", "q", T0 - i)), ("Pod", pod(f"p{i}", f"g{i}", 1 + i % 2, placed))]
    config = SchedulerConfig()
    ssn = open_session(take_snapshot(cluster(*objects), config.scheduler_name, T0), config, T0)
    nodes = ssn.nodes
    tasks = [task for job in ssn.jobs.values() for task in job.tasks.values()]
    stmt = Statement(ssn)
    asked = 0
    for step in range(600):
        task, move = rng.choice(tasks), rng.random()
        if move < 0.3 and task.status is PodStatus.RUNNING:
            stmt.evict(task, "evicted")
        elif move < 0.6 and task.status in (PodStatus.PENDING, PodStatus.RELEASING):
            stmt.pipeline(task, f"n{rng.randrange(12)}", update_if_on_node=True)
        elif move < 0.7 and task.status is PodStatus.PENDING:
            stmt.allocate(task, f"n{rng.randrange(12)}")
        elif move < 0.75:
            stmt.rollback(rng.randrange(stmt.checkpoint() + 1))
        if step % rng.choice((1, 1, 1, 7)):
            continue
        for asked_task in rng.sample(tasks, 3):
            assert np.array_equal(nodes.fits_non_allocated(asked_task), nodes.fits(asked_task, nodes.non_allocated()))
            assert np.array_equal(nodes.fits_idle(asked_task), nodes.fits(asked_task, nodes.idle))
            short = asked_task.req_vec[:, None] > nodes.idle + nodes.releasing + 1e-9
            assert np.array_equal(nodes.short_of(asked_task), short)
            asked += 1
    stmt.discard()
    assert asked > 300
