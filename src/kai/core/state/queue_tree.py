"""Which queues the hierarchy can use: every ancestor of a queue must exist, be valid and not lead back to it.

KAI drops a queue whose parent is missing, together with its subtree, and its podgroups then read "Queue '<q>' does
not exist" although the queue is there. Here each unusable queue gets its reason (missing parent, parent cycle,
unusable ancestor), so that the Queue and the pods that use it can say why (docs/architecture.md §8).
"""

from collections.abc import Collection, Mapping

from kai.core.model.errors import InvalidObject
from kai.core.model.objects import Queue

PARENT_FIELD = "spec.parentQueue"


def queue_tree_problems(queues: Mapping[str, Queue], invalid: Collection[str]) -> dict[str, InvalidObject]:
    """The unusable queues among ``queues`` with their reasons; ``invalid`` names the queues that failed to parse.

    Each queue is walked up once: a walk stops at a top queue, a missing parent, a queue seen earlier or a cycle,
    and the queues on the way take their fate from their parent, top-most first.
    """
    problems: dict[str, InvalidObject] = {}
    root_cause: dict[str, str] = {}
    usable: set[str] = set()
    for start in queues:
        path: list[str] = []
        name = start
        while name not in usable and name not in problems:
            if name in path:
                cycle = path[path.index(name) :]
                for i, member in enumerate(cycle):
                    loop = [*cycle[i:], *cycle[:i], member]
                    problems[member] = _problem(member, f"parent cycle {' → '.join(loop)}")
                    root_cause[member] = f"{member}: {problems[member].problem}"
                break
            path.append(name)
            parent = queues[name].parent
            if not parent:
                usable.add(name)
            elif parent not in queues:
                state = "is invalid (see its own error)" if parent in invalid else "does not exist"
                problems[name] = _problem(name, f"parent queue '{parent}' {state}")
                root_cause[name] = f"{name}: {problems[name].problem}"
            else:
                name = parent
        for name in reversed(path):
            if name in usable or name in problems:
                continue
            parent = queues[name].parent
            if parent in usable:
                usable.add(name)
            else:
                root_cause[name] = root_cause[parent]
                problems[name] = _problem(name, f"parent queue '{parent}' is not usable ({root_cause[parent]})")
    return problems


def _problem(name: str, reason: str) -> InvalidObject:
    return InvalidObject(f"Queue {name}", PARENT_FIELD, reason)
