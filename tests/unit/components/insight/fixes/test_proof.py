"""A proof is the what-if's changed run watched for the cycle that starts the podgroup: a change that gives the gang
room starts it in the next cycle, one that does not says why it still waits, one that cannot be made says so."""

from pathlib import Path

import yaml
from insight_support import NOW, node_obj, pod_obj, podgroup_obj, queue_obj

from kai.components.insight.fixes.proof import prove
from kai.components.sim.scenario import Scenario, load_scenario
from kai.components.sim.whatif.changes import Changes, NodeAddition, QueueChange

CLASSES = [{"kind": "PriorityClass", "metadata": {"name": "train"}, "value": 50}]


def gang_on_a_full_node(tmp_path: Path) -> Scenario:
    """n0 (4 GPUs) is held by `first`; the gang `big` of 2 × 2 GPUs waits for room."""
    objects = [
        *CLASSES,
        queue_obj("a"),
        node_obj("n0", 4),
        podgroup_obj("first", "a", 1, priorityClassName="train"),
        pod_obj("first-0", "first", 4, "n0"),
        podgroup_obj("big", "a", 2, priorityClassName="train"),
        pod_obj("big-0", "big", 2),
        pod_obj("big-1", "big", 2),
    ]
    path = tmp_path / "cluster.yaml"
    path.write_text(yaml.safe_dump({"name": "proof", "now": NOW, "objects": objects}))
    return load_scenario(path)


def test_a_change_that_gives_the_gang_room_starts_it_in_the_next_cycle(tmp_path: Path) -> None:
    proof, session = prove(gang_on_a_full_node(tmp_path), Changes(add_nodes=[NodeAddition("n0", 1)]), "team/big", 2)
    assert (proof.started_in, proof.evicted, proof.outcome) == (1, (), "")
    assert session is not None and {bind.pod_key for bind in session.result.binds} == {"team/big-0", "team/big-1"}


def test_a_change_that_does_not_start_it_says_why_it_still_waits(tmp_path: Path) -> None:
    raised = Changes(queues=[QueueChange("a", ("gpu", "quota"), 16.0)])
    proof, _ = prove(gang_on_a_full_node(tmp_path), raised, "team/big", 2)
    assert proof.started_in is None and proof.outcome.startswith("still waits: ")


def test_a_change_that_cannot_be_made_is_said(tmp_path: Path) -> None:
    proof, session = prove(gang_on_a_full_node(tmp_path), Changes(remove_nodes=["n9"]), "team/big", 2)
    assert session is None and proof.outcome.startswith("the change cannot be made: ")
    assert "n9" in proof.outcome
