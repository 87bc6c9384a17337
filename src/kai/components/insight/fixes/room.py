"""Room for a waiting podgroup's pods: named pods moved off their nodes, nodes added like an existing one.

Its waiting pods are packed, largest first, into what their allowed nodes have free (the node filters: affinity,
taints, GPU kind) on the node each fills best; what does not fit goes to nodes freed by moving named pods (fewest
pods first, at most ``MOST_MOVED``): pods of lower-priority or over-quota queues may be left waiting, others only
moved to room left elsewhere; else to new nodes like a node of the input it fits on (and one more, in case jobs
ahead of it take one). A few array operations over the node table; the proof decides.
"""

from dataclasses import dataclass

import numpy as np

from kai.components.insight.inspect import Inspection
from kai.core.framework.session import Session
from kai.core.model import names
from kai.core.model.text import go_float
from kai.core.state.node_table import Mask, Matrix
from kai.core.state.pod_status import PodStatus
from kai.core.state.podgroup_info import PodGroupInfo
from kai.core.state.resource_index import GPU_ROW
from kai.core.state.task import TaskInfo

MOVABLE = frozenset({PodStatus.RUNNING, PodStatus.BOUND})
MOST_MOVED = 8
"""Pods one change moves at most: beyond that, disturbing pods is no fix a user would take (nodes are added)."""
EPSILON = 1e-9


@dataclass(frozen=True)
class Room:
    """Room for the waiting pods: named pods moved off their nodes, and nodes added like an existing one."""

    moves: tuple[tuple[str, str], ...] = ()
    """(pod, node) of each pod to move, by node."""
    added: tuple[tuple[str, int, float], ...] = ()
    """(model node, count, GPUs per node)."""

    def texts(self) -> list[str]:
        texts = []
        by_node: dict[str, list[str]] = {}
        for pod, node in self.moves:
            by_node.setdefault(node, []).append(pod)
        if by_node:
            offs = [f"{', '.join(pods)} off node {node}" for node, pods in by_node.items()]
            texts.append(f"move {' and '.join(offs)} (evicted: back to pending)")
        for model, count, gpus in self.added:
            each = f", {go_float(gpus)} GPUs each" if count > 1 else f", {go_float(gpus)} GPUs"
            texts.append(f"add {count} node{'s' * (count != 1)} like {model}{each if gpus else ''}")
        return texts


def rooms(ins: Inspection, ssn: Session, job: PodGroupInfo, no_room: bool) -> list[Room]:
    """Ways to make room for the pods the podgroup still needs, when what is free does not hold them (or the cycle
    found no room for them, ``no_room``: jobs ahead of it in line took it)."""
    nodes = ssn.nodes
    tasks = _needed(job)
    if not tasks or not len(nodes):
        return []
    allowed = {task.key: _allowed(ssn, task, job) for task in tasks}
    free = nodes.non_allocated().copy()
    left = [task for task in tasks if not _place(free, task, allowed[task.key])]
    if not left and not no_room:
        return []
    found: list[Room] = []
    models = {obj["metadata"]["name"] for obj in ins.scenario.objects if obj["kind"] == "Node"}
    if not left:
        # the room is there but the cycle found none: jobs ahead took it, or it lies in the wrong places (a topology
        # domain short of a few GPUs); one node more may be enough, else room for all of it
        left = tasks
        free = nodes.non_allocated().copy()
        one = _added(ssn, left[:1], allowed, models)
        if one is not None:
            found.append(Room(added=one))
    added = _added(ssn, left, allowed, models)
    if added is not None:
        found.append(Room(added=added))
        found.append(Room(added=tuple((model, count + 1, gpus) for model, count, gpus in added)))
    moves, rest = _moves(ins, ssn, job, left, allowed, free)
    if moves:
        more = _added(ssn, rest, allowed, models) if rest else ()
        if more is not None:
            found.append(Room(moves=moves, added=more))
    return found


def _needed(job: PodGroupInfo) -> list[TaskInfo]:
    """The pending pods the podgroup must place to start: each pod set's gang short of its minimum (one pod of an
    elastic podgroup whose gang is whole), largest first."""
    tasks: list[TaskInfo] = []
    for pod_set in job.pod_sets.values():
        pending = [t for t in pod_set.tasks.values() if t.status is PodStatus.PENDING]
        short = max(pod_set.min_available - pod_set.active_allocated, 0)
        tasks += _largest_first(pending)[:short]
    if not tasks:
        pending = [t for t in job.tasks.values() if t.status is PodStatus.PENDING]
        tasks = _largest_first(pending)[:1]
    return _largest_first(tasks)


def _largest_first(tasks: list[TaskInfo]) -> list[TaskInfo]:
    return sorted(tasks, key=lambda t: (-float(t.req_vec[GPU_ROW]), -float(t.req_vec.sum()), t.key))


def _allowed(ssn: Session, task: TaskInfo, job: PodGroupInfo) -> Mask:
    """The nodes the static filters (affinity, taints, GPU kind, readiness) let the pod onto."""
    mask: Mask = np.ones(len(ssn.nodes), dtype=bool)
    for node_filter in ssn.node_filters:
        exclusion = node_filter(task, job)
        if exclusion is not None:
            mask &= exclusion.allowed
    return mask


def _place(free: Matrix, task: TaskInfo, allowed: Mask) -> bool:
    """Take room for ``task`` on the allowed node it fills best (least left over), as binpacking would."""
    fits = allowed & np.all(task.req_vec[:, None] <= free + EPSILON, axis=0)
    if not fits.any():
        return False
    left_over = np.where(fits, free[GPU_ROW] - task.req_vec[GPU_ROW], np.inf)
    column = int(np.argmin(left_over))
    free[:, column] -= task.req_vec
    return True


def _added(
    ssn: Session, tasks: list[TaskInfo], allowed: dict[str, Mask], names_in_input: set[str]
) -> tuple[tuple[str, int, float], ...] | None:
    """New nodes for ``tasks``: copies of the allowed node of the input with the fewest GPUs that holds the largest
    of them when empty, as many as hold them all; None when no node could hold one of them even empty."""
    nodes = ssn.nodes
    of_input = np.array([info.name in names_in_input for info in nodes.infos], dtype=bool)
    models: dict[int, list[TaskInfo]] = {}
    for task in tasks:
        fits = np.all(task.req_vec[:, None] <= nodes.allocatable + EPSILON, axis=0)
        holds = allowed[task.key] & of_input & fits
        if not holds.any():
            return None
        chosen = next((column for column in models if holds[column]), None)
        if chosen is None:
            columns = np.flatnonzero(holds)
            chosen = int(min(columns, key=lambda c: (nodes.allocatable[GPU_ROW, c], nodes.infos[c].name)))
        models.setdefault(chosen, []).append(task)
    added = []
    for column, placed in models.items():
        copies: list[Matrix] = []
        for task in placed:
            spot = next((c for c in copies if np.all(task.req_vec <= c + EPSILON)), None)
            if spot is None:
                copies.append(nodes.allocatable[:, column].copy())
                spot = copies[-1]
            spot -= task.req_vec
        added.append((nodes.infos[column].name, len(copies), float(nodes.allocatable[GPU_ROW, column])))
    return tuple(added)


def _moves(
    ins: Inspection, ssn: Session, job: PodGroupInfo, tasks: list[TaskInfo], allowed: dict[str, Mask], free: Matrix
) -> tuple[tuple[tuple[str, str], ...], list[TaskInfo]]:
    """Room made by moving pods: for each pod, the allowed node where the fewest pods (then the fewest GPUs) must
    move; the pods no node can be freed for are returned. A pod of a lower-priority or over-quota queue may be left
    waiting; any other pod moves only to room left elsewhere (it restarts there, as consolidation moves pods)."""
    movable = _movable(ins, ssn, job)
    free = free.copy()
    moves: list[tuple[str, str]] = []
    rest: list[TaskInfo] = []
    for task in tasks:
        best: tuple[int, float, str, Matrix, list[Movable]] | None = None
        for column in np.flatnonzero(allowed[task.key]):
            name = ssn.nodes.infos[int(column)].name
            option = _free_node(ssn, task, int(column), free, movable.get(int(column), []), allowed)
            if option is None:
                continue
            after, victims = option
            rank = (len(victims), sum(float(v.task.req_vec[GPU_ROW]) for v in victims), name)
            if best is None or rank < best[:3]:
                best = (*rank, after, victims)
        if best is None or len(moves) + len(best[4]) > MOST_MOVED:
            rest.append(task)
            continue
        name, free, victims = best[2], best[3], best[4]
        for victim in victims:
            movable[ssn.nodes.by_name[name].column].remove(victim)
            moves.append((victim.task.key, name))
    return tuple(moves), rest


@dataclass(frozen=True)
class Movable:
    task: TaskInfo
    job: PodGroupInfo
    may_wait: bool
    """Of a lower-priority or over-quota queue: it may be left waiting (else it needs room elsewhere)."""


def _free_node(
    ssn: Session, task: TaskInfo, column: int, free: Matrix, movable: list[Movable], allowed: dict[str, Mask]
) -> tuple[Matrix, list[Movable]] | None:
    """Room for ``task`` on ``column`` by moving the fewest pods there (largest first): the free room after the
    move and the pods moved; None when moving cannot make room, or there is room without moving. ``allowed``
    caches each pod's allowed nodes."""
    after = free.copy()
    if np.all(task.req_vec <= after[:, column] + EPSILON):
        return None  # room without moving: taken by packing already, or by others in line
    chosen: list[Movable] = []
    for victim in sorted(movable, key=lambda v: (-float(v.task.req_vec[GPU_ROW]), v.task.key)):
        lacking = task.req_vec - after[:, column]
        if np.all(lacking <= EPSILON):
            break
        if not np.any((victim.task.req_vec > EPSILON) & (lacking > EPSILON)):
            continue
        if not victim.may_wait:
            if victim.task.key not in allowed:
                allowed[victim.task.key] = _allowed(ssn, victim.task, victim.job)
            elsewhere = allowed[victim.task.key].copy()
            elsewhere[column] = False
            if not _place(after, victim.task, elsewhere):
                continue
        after[:, column] += victim.task.req_vec
        chosen.append(victim)
    if not np.all(task.req_vec <= after[:, column] + EPSILON):
        return None
    after[:, column] -= task.req_vec
    return after, chosen


def _movable(ins: Inspection, ssn: Session, job: PodGroupInfo) -> dict[int, list[Movable]]:
    """By node column: the running pods of other podgroups that run on a node in the input (so that a what-if can
    move them), each marked whether it may be left waiting."""
    shares = ssn.queue_share_fns[0] if ssn.queue_share_fns else None
    on_nodes = {
        f"{obj['metadata'].get('namespace')}/{obj['metadata']['name']}": (obj.get("spec") or {}).get("nodeName")
        for obj in ins.scenario.objects
        if obj["kind"] == "Pod"
    }
    over: dict[str, bool] = {}
    found: dict[int, list[Movable]] = {}
    for other in ssn.jobs.values():
        if other.key == job.key:
            continue
        if other.queue not in over:
            numbers = shares(other.queue) if shares is not None and other.queue in ssn.queues else None
            over[other.queue] = numbers is not None and (
                numbers["deserved"]["gpu"] != names.UNLIMITED
                and numbers["allocated"]["gpu"] > numbers["deserved"]["gpu"] + EPSILON
            )
        may_wait = other.priority < job.priority or over[other.queue]
        for task in other.tasks.values():
            info = ssn.nodes.by_name.get(task.node_name)
            if task.status in MOVABLE and info is not None and on_nodes.get(task.key) == task.node_name:
                found.setdefault(info.column, []).append(Movable(task, other, may_wait))
    return found
