"""Runs of the cluster state machine that the 10,000-example bench found violating a property, replayed step by step
so that they stay fixed."""

from collections.abc import Iterator

from cluster_machine import ClusterMachine


class Draws:
    """Stands for hypothesis's ``data`` object: hands out the values the bench drew, in order."""

    def __init__(self, *values: int) -> None:
        self.values: Iterator[int] = iter(values)

    def draw(self, strategy: object, label: str | None = None) -> int:
        return next(self.values)


def test_a_job_pipelined_by_reclaim_gets_what_its_victim_frees() -> None:
    """Queue b's head job (a gang of four 2-GPU pods) cannot fit anywhere, so fair-share order puts queue a, over its
    quota, first: a's pending 1-GPU pod takes the node's last pod slot, and b's half-GPU job (under quota) reclaims
    it, pipelined onto that slot. The next cycle the evicted pod is back, pending: tried in fair-share order it took
    the slot again and was reclaimed again, every cycle (bench batch 1, PYTHONHASHSEED=0). Allocate now tries the
    previous cycle's pipelined jobs first, and the quiet cycles settle."""
    m = ClusterMachine()
    m.setup(dept=(16, 8), nodes=[4], leaves=[(2, 4, 1), (3, 0, 2)])
    m.cycle()
    m.arrive(data=Draws(1), gpus="1", members=3, priority="train", queue="a")
    m.arrive(data=Draws(4), gpus="2", members=4, priority="train", queue="b")
    m.cycle()
    m.arrive(data=Draws(1), gpus="2", members=1, priority="train", queue="a")
    m.quiet()
    m.arrive(data=Draws(1), gpus="0", members=1, priority="inference", queue="a")
    m.arrive(data=Draws(2), gpus="0.5", members=3, priority="inference", queue="a")
    m.quiet()
    m.quiet()
    m.arrive(data=Draws(2), gpus="1", members=3, priority="train", queue="a")
    m.quiet()
    m.arrive(data=Draws(1), gpus="0.5", members=1, priority="train", queue="b")
    m.arrive(data=Draws(1), gpus="0", members=3, priority="train", queue="b")
    m.arrive(data=Draws(1), gpus="2", members=1, priority="train", queue="a")
    m.arrive(data=Draws(1), gpus="2", members=1, priority="inference", queue="a")
    m.arrive(data=Draws(2), gpus="2", members=4, priority="train", queue="b")
    m.arrive(data=Draws(1), gpus="2", members=1, priority="inference", queue="a")
    m.quiet()  # asserts no pod evicted twice from one node, and nothing left to do at the end
    bound = {p["metadata"]["name"]: p["spec"].get("nodeName") for p in m.cluster.list("Pod")}
    assert bound["job-6-0"] == "node-0", "the half-GPU job that reclaimed the slot does not hold it"


def test_a_pod_consolidation_moved_is_placed_where_it_was_moved_to() -> None:
    """node-0 (8 GPUs) ends with its 8 pod slots full and GPUs free, the 2-GPU nodes with slots and no GPU; job-3's
    third 1-GPU pod fits only once consolidation moves job-5-0 (no GPU) to node-1. job-5-0 comes back pending, and its
    gang (below its minMember) goes first: binpack put it back on node-0, in the slot made for job-3-2, and the next
    consolidation moved it again, every other cycle (issue 29's 10,000-example run, twice). The node the last cycle
    pipelined a pod of its podgroup onto now counts as nominated."""
    m = ClusterMachine()
    m.setup(dept=(10, -1), nodes=[8, 2, 2, 2], leaves=[(7, 0, 2), (7, 0, 2)])
    m.arrive(data=Draws(3), gpus="0.5", members=3, priority="inference", queue="b")
    m.edit_queue(limit=16, queue="b", quota=4, weight=3)
    m.quiet()
    m.arrive(data=Draws(3), gpus="1", members=3, priority="train", queue="a")
    m.arrive(data=Draws(3), gpus="2", members=4, priority="inference", queue="a")
    m.edit_queue(limit=4, queue="b", quota=9, weight=3)
    m.quiet()
    m.quiet()
    m.arrive(data=Draws(2), gpus="1", members=3, priority="train", queue="b")
    m.edit_queue(limit=0, queue="b", quota=6, weight=1)
    m.arrive(data=Draws(3), gpus="0", members=3, priority="train", queue="b")
    m.edit_queue(limit=4, queue="b", quota=1, weight=2)
    m.arrive(data=Draws(2), gpus="0", members=2, priority="train", queue="b")
    m.quiet()  # asserts no pod evicted twice from one node, and nothing left to do at the end
    bound = {p["metadata"]["name"]: p["spec"].get("nodeName") for p in m.cluster.list("Pod")}
    assert (bound["job-5-0"], bound["job-3-2"]) == ("node-1", "node-0")
