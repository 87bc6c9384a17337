"""Which queues of a tree cannot be used and why: a missing or invalid parent, a cycle, or an unusable ancestor
(named as the root cause), each walked once."""

from kai.core.model.objects import parse_queue
from kai.core.state.queue_tree import queue_tree_problems


def _queues(**parents: str) -> dict:
    return {
        name: parse_queue({"metadata": {"name": name}, "spec": {"parentQueue": parent} if parent else {}})
        for name, parent in parents.items()
    }


def test_each_unusable_queue_says_why_and_the_rest_are_usable() -> None:
    queues = _queues(root="", team="root", orphan="gone", child="orphan", a="b", b="a", under="a", bad="broken")
    problems = {name: error.problem for name, error in queue_tree_problems(queues, invalid={"broken"}).items()}
    assert problems == {
        "orphan": "parent queue 'gone' does not exist",
        "child": "parent queue 'orphan' is not usable (orphan: parent queue 'gone' does not exist)",
        "a": "parent cycle a → b → a",
        "b": "parent cycle b → a → b",
        "under": "parent queue 'a' is not usable (a: parent cycle a → b → a)",
        "bad": "parent queue 'broken' is invalid (see its own error)",
    }
    assert all(error.obj == f"Queue {name}" for name, error in queue_tree_problems(queues, {"broken"}).items())
