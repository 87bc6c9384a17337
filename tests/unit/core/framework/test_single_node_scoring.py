"""A task that only one node can take is placed there without scoring the nodes (``allocate_task``); with scoring
forced (a node pre-order hook, which makes the scores worth working out), random reclaim clusters decide alike."""

import random
from typing import Any

import pytest
from core_builders import T0, cluster, node, pod, podgroup, queue

from kai.core import cycle
from kai.core.framework.config import SchedulerConfig
from kai.core.framework.session import Session
from kai.core.state.cluster_state import ClusterState
from kai.core.state.snapshot import take_snapshot


def _state(rng: random.Random) -> ClusterState:
    objects: list[tuple[str, dict[str, Any]]] = [("Queue", queue("a", gpu_quota=0)), ("Queue", queue("b"))]
    nodes = rng.randrange(3, 7)
    for n in range(nodes):
        gpus = rng.choice((4, 8))
        objects.append(("Node", node(f"n{n}", gpus)))
        free = gpus
        while free > rng.choice((0, 1, 2)):
            size = min(free, rng.choice((1, 1, 2)))
            name = f"run-{n}-{free}"
            objects += [("PodGroup", podgroup(name, "a", T0 - 100 - free)), ("Pod", pod(name, name, size, f"n{n}"))]
            free -= size
    for j in range(rng.randrange(1, 6)):
        name, members = f"wait-{j}", rng.choice((1, 1, 2, 3))
        objects.append(("PodGroup", podgroup(name, "b", T0 - j, minMember=members)))
        objects += [("Pod", pod(f"{name}-{i}", name, rng.choice((1, 2)))) for i in range(members)]
    return cluster(*objects)


def _decisions(state: ClusterState) -> tuple[Any, ...]:
    config = SchedulerConfig()
    result = cycle.run_cycle(take_snapshot(state, config.scheduler_name, T0), config, T0).result
    return (
        [(b.pod_key, b.node, b.gpu_groups) for b in result.binds],
        [(e.pod_key, e.node, e.action, e.message) for e in result.evictions],
        [(p.pod_key, p.node) for p in result.pipelined],
        {key: (u.reason, u.message) for key, u in result.unschedulable.items()},
        dict(result.search.scenarios),
    )


@pytest.mark.parametrize("seed", range(25))
def test_single_node_placements_decide_as_scored_ones(seed: int, monkeypatch: pytest.MonkeyPatch) -> None:
    shortcut = _decisions(_state(random.Random(seed)))
    opened = cycle.open_session

    def scoring_always(*args: Any, **kwargs: Any) -> Session:
        ssn = opened(*args, **kwargs)
        ssn.node_pre_order_fns.append(lambda task, candidates: None)
        return ssn

    monkeypatch.setattr(cycle, "open_session", scoring_always)
    assert _decisions(_state(random.Random(seed))) == shortcut
