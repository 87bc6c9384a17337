"""Candidate changes as values: their cost, their text, what they add up to when refined, and when one makes every
change of another (so that the other, once proven, makes it no other way)."""

from kai.components.insight.fixes.bounds import Raise
from kai.components.insight.fixes.candidates import Candidate
from kai.components.insight.fixes.room import Room

LIMIT = Raise("a", "gpu", "limit", 4.0, 6.0)
CPU = Raise("a", "cpu", "quota", 2000.0, 6000.0)


def test_cost_counts_gpus_changed_then_pods_moved_then_objects() -> None:
    room = Room(moves=(("team/x-0", "n0"), ("team/y-0", "n0")), added=(("n1", 2, 8.0),))
    candidate = Candidate((LIMIT, CPU), room)
    assert candidate.cost == (2.0 + 16.0, 2, 1 + 2 + 2)  # CPU is no GPU; one queue, two nodes, two pods
    assert candidate.text == (
        "raise the GPU limit of queue a from 4 to 6 GPUs; raise the CPU quota of queue a from 2 to 6 cores; "
        "move team/x-0, team/y-0 off node n0 (evicted: back to pending); add 2 nodes like n1, 8 GPUs each"
    )
    assert candidate.changes.as_document() == {
        "queues": {"a": {"gpu": {"limit": 6}, "cpu": {"quota": 6000}}},
        "nodes": {"add": [{"like": "n1", "count": 2}]},
        "pods": {"evict": ["team/x-0", "team/y-0"]},
    }


def test_a_refined_change_keeps_the_first_old_value_and_adds_room() -> None:
    base = Candidate((LIMIT,), Room(added=(("n1", 1, 8.0),)))
    refined = base.plus((Raise("a", "gpu", "limit", 6.0, 9.0),), Room(added=(("n1", 1, 8.0),)))
    assert refined.raises == (Raise("a", "gpu", "limit", 4.0, 9.0),)
    assert refined.room.added == (("n1", 2, 8.0),)
    assert base.within(refined) and not refined.within(base)
    assert not Candidate((LIMIT,), Room()).within(Candidate((), Room(added=(("n1", 1, 8.0),))))
