"""Nodes of a cycle as resource-major numpy arrays (one row per resource, one column per node).

Fit checks and node scores run over all nodes at once (docs/architecture.md §7). Columns are in node-name order, so the
first of equal-scored nodes is also the first by name — KAI's tie-break. Accounting follows KAI's NodeInfo:
a Releasing pod adds to used and releasing; a Pipelined pod adds to used and takes from releasing; any other
placed pod adds to used and takes from idle. A DRA GPU device that several pods use through one claim is counted
once per node, by the first of them (KAI #1931): the others add no GPU for it, and fit on it.
"""

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from kai.core.model.dra import Device
from kai.core.model.objects import Node
from kai.core.model.resources import mig_gpu_portion
from kai.core.state.gpu_sharing import SharedGpus, request_portion, task_gpu_memory, valid_portion
from kai.core.state.pod_status import PodStatus
from kai.core.state.resource_index import GPU_ROW, ResourceIndex, Vector
from kai.core.state.task import TaskInfo

Matrix = npt.NDArray[np.float64]
Mask = npt.NDArray[np.bool_]


class NodeInfo:
    """The Python side of one node: its object, its column and the tasks placed on it."""

    __slots__ = ("column", "dra_refs", "gpu_count", "legacy_mig_tasks", "name", "node", "shared", "tasks")

    def __init__(self, node: Node, column: int, gpu_count: int) -> None:
        self.node = node
        self.name = node.name
        self.column = column
        self.gpu_count = gpu_count
        self.tasks: dict[str, TaskInfo] = {}
        self.legacy_mig_tasks: set[str] = set()
        self.shared = SharedGpus()
        self.dra_refs: dict[Device, int] = {}
        """How many of its tasks hold each DRA GPU device (the first counts it in the arrays)."""

    @property
    def gpu_memory_mib(self) -> int:
        return self.node.gpu_memory_mib

    def copy(self) -> "NodeInfo":
        copied = NodeInfo(self.node, self.column, self.gpu_count)
        copied.tasks = dict(self.tasks)
        copied.legacy_mig_tasks = set(self.legacy_mig_tasks)
        copied.shared = self.shared.copy()
        copied.dra_refs = dict(self.dra_refs)
        return copied


NO_TASKS: frozenset[str] = frozenset()
SHORT_CACHE_LIMIT = 256
"""Requests whose ``NodeTable.short_of`` is kept at most (each a resources x nodes matrix)."""


@dataclass(frozen=True, slots=True)
class NodeState:
    """One node's accounting at a moment (its column of the arrays, its shared GPUs), to be put back exactly."""

    info: NodeInfo
    idle: Vector
    used: Vector
    releasing: Vector
    shared: SharedGpus | None
    """None: no shared GPU in use."""
    legacy_mig_tasks: frozenset[str]
    has_shared: bool
    dra_refs: dict[Device, int] | None = None


class NodeTable:
    def __init__(self, nodes: list[Node], index: ResourceIndex, dra_gpus: Mapping[str, float] | None = None) -> None:
        """``dra_gpus``: GPUs a node offers through DRA ResourceSlices, added to its allocatable GPUs (as KAI does)."""
        ordered = sorted(nodes, key=lambda n: n.name)
        self.index = index
        count = len(ordered)
        self.allocatable: Matrix = np.zeros((len(index), count))
        self.gpu_memory = np.zeros(count)
        self.ready: Mask = np.zeros(count, dtype=bool)
        self.cpu_only: Mask = np.zeros(count, dtype=bool)
        self.infos: list[NodeInfo] = []
        self.by_name: dict[str, NodeInfo] = {}
        self.mig_rows = [(row, portion) for row, name in enumerate(index.names) if (portion := mig_gpu_portion(name))]
        """Rows of MIG profiles with the GPU slices each counts for (a MIG node's GPUs are its slices)."""
        for column, node in enumerate(ordered):
            self.infos.append(self._describe(column, node, (dra_gpus or {}).get(node.name, 0.0)))
            self.by_name[node.name] = self.infos[column]
        self.shared_columns: set[int] = set()
        self.jobless_columns: set[int] = set()
        """Columns of nodes holding a task of no job (another scheduler's pod, say), as the snapshot placed them."""
        self.affinity_columns: set[int] = set()
        """Columns of nodes holding a task with pod (anti-)affinity terms, required or preferred, as the snapshot
        placed them."""
        self._changes: list[int] = []
        """The column each placement change touched, in order; its length is the table's version."""
        self._non_allocated: tuple[int, Matrix] | None = None
        self._short_cache: dict[bytes, tuple[int, npt.NDArray[np.bool_]]] = {}
        """Per request: the version it holds for and ``short_of``'s matrix."""
        self._fit_cache: dict[tuple[bytes, bool], tuple[int, Mask, npt.NDArray[np.intp]]] = {}
        """Per request and kind of room: the version it holds for, the mask, and the request's resource rows (as a
        column, to index the changed columns' rows with)."""
        self.idle: Matrix = self.allocatable.copy()
        self.used: Matrix = np.zeros_like(self.allocatable)
        self.releasing: Matrix = np.zeros_like(self.allocatable)

    def _describe(self, column: int, node: Node, dra_gpus: float) -> NodeInfo:
        """Fills a node's column of the static arrays; returns its NodeInfo, without tasks."""
        self.allocatable[:, column] = self.index.vector(node.allocatable)
        self.allocatable[GPU_ROW, column] += dra_gpus
        self.gpu_memory[column] = node.gpu_memory_mib
        self.ready[column] = node.ready
        self.cpu_only[column] = not node.mig_enabled and self.allocatable[GPU_ROW, column] <= 0
        gpu_count = node.gpu_count_label if node.gpu_count_label is not None else int(self.allocatable[GPU_ROW, column])
        return NodeInfo(node, column, gpu_count)

    def replace_node(self, node: Node, dra_gpus: float) -> int:
        """A new version of a node already in the table (same name): its column describes it, with the tasks it
        holds, whose accounting ``recount`` must redo. Returns its column."""
        old = self.by_name[node.name]
        info = self._describe(old.column, node, dra_gpus)
        info.tasks = old.tasks
        self.infos[old.column] = self.by_name[node.name] = info
        return old.column

    def recount(self, columns: set[int]) -> None:
        """Redo the accounting of these columns from the tasks their nodes hold, in their order: what ``add_placed``
        gives a fresh table for them."""
        placed: list[tuple[TaskInfo, NodeInfo]] = []
        for column in sorted(columns):
            info = self.infos[column]
            self.idle[:, column] = self.allocatable[:, column]
            self.used[:, column] = 0.0
            self.releasing[:, column] = 0.0
            info.shared = SharedGpus()
            info.dra_refs = {}
            info.legacy_mig_tasks = set()
            self.shared_columns.discard(column)
            self.jobless_columns.discard(column)
            self.affinity_columns.discard(column)
            placed += [(task, info) for task in info.tasks.values()]
        self.add_placed(placed)

    def fork(self, previous: "NodeTable | None", refresh: set[int]) -> "NodeTable":
        """A copy of this table's accounting for one session to change. Its static arrays are shared (read-only);
        its nodes are copies, except that ``previous`` (the last fork, its session over, with the same columns)
        lends those outside ``refresh``: the columns its session did not touch and this table has not changed
        since."""
        table = object.__new__(NodeTable)
        table.index, table.allocatable, table.gpu_memory = self.index, self.allocatable, self.gpu_memory
        table.ready, table.cpu_only, table.mig_rows = self.ready, self.cpu_only, self.mig_rows
        if previous is None:
            table.infos = [info.copy() for info in self.infos]
        else:
            table.infos = list(previous.infos)
            for column in refresh:
                table.infos[column] = self.infos[column].copy()
        table.by_name = {info.name: info for info in table.infos}
        table.shared_columns = set(self.shared_columns)
        table.jobless_columns, table.affinity_columns = self.jobless_columns, self.affinity_columns
        table._changes = []
        table._non_allocated = None
        table._fit_cache = {}
        table._short_cache = {}
        table.idle, table.used, table.releasing = self.idle.copy(), self.used.copy(), self.releasing.copy()
        return table

    def touched(self) -> set[int]:
        """The columns whose nodes a session changed (their accounting, tasks or shared GPUs)."""
        return set(self._changes)

    def __len__(self) -> int:
        return len(self.infos)

    def add_task(self, task: TaskInfo, node: NodeInfo) -> None:
        """Place a task's resources on a node according to its status."""
        node.tasks[task.key] = task
        if task.pod.is_legacy_mig:
            node.legacy_mig_tasks.add(task.key)
        task.accepted_gpus = accepted_gpus(task, node)
        self._account(task, node, 1.0)
        if task.request.is_shared_gpu:
            self.shared_columns.add(node.column)
            for group in task.gpu_groups:
                self._add_shared(task, node, group)

    def add_placed(self, placed: list[tuple[TaskInfo, NodeInfo]]) -> None:
        """``add_task`` for a snapshot's placed tasks, in order, with the arrays' sums added per resource row at
        once (a numpy update per task was most of a snapshot at 100,000 pods). Shared-GPU tasks are accounted one
        by one after the rest: their groups' arithmetic reads idle + used GPUs of their node, which no other
        snapshot status (none is pipelined or allocated) changes, so the outcome is the same as in order; so are
        tasks holding DRA devices, whose count depends on the node's other holders."""
        shared: list[tuple[TaskInfo, NodeInfo]] = []
        columns: list[int] = []
        vectors: list[Vector] = []
        releasing: list[bool] = []
        for task, node in placed:
            assert task.status is not PodStatus.PIPELINED, "a snapshot places no pipelined task"
            node.tasks[task.key] = task
            if task.pod.is_legacy_mig:
                node.legacy_mig_tasks.add(task.key)
            task.accepted_gpus = accepted_gpus(task, node)
            if not task.job_key:
                self.jobless_columns.add(node.column)
            if task.pod.pod_affinity.has_terms:
                self.affinity_columns.add(node.column)
            if task.request.is_shared_gpu or task.dra_devices:
                shared.append((task, node))
                continue
            columns.append(node.column)
            vectors.append(_tracked(task))
            releasing.append(task.status is PodStatus.RELEASING)
        if columns:
            at = np.array(columns, dtype=np.intp)
            stacked = np.stack(vectors)
            np.add.at(self.used.T, at, stacked)
            np.subtract.at(self.idle.T, at, stacked)
            marked = np.array(releasing, dtype=bool)
            if marked.any():
                np.add.at(self.releasing.T, at[marked], stacked[marked])
        mark = len(self._changes)
        for task, node in shared:
            self._account(task, node, 1.0)
            if task.request.is_shared_gpu:
                self.shared_columns.add(node.column)
                for group in task.gpu_groups:
                    self._add_shared(task, node, group)
        del self._changes[mark:]  # building the table is no change a session made

    def remove_task(self, task: TaskInfo, node: NodeInfo) -> None:
        del node.tasks[task.key]
        node.legacy_mig_tasks.discard(task.key)
        self._account(task, node, -1.0)
        if task.request.is_shared_gpu:
            for group in task.gpu_groups:
                self._remove_shared(task, node, group)

    def _used_gpus(self, node: NodeInfo) -> int:
        return int(self.used[GPU_ROW, node.column]) + node.shared.groups_in_use()

    def _take_idle_gpu(self, node: NodeInfo) -> None:
        if node.gpu_count < int(self.idle[GPU_ROW, node.column]) + self._used_gpus(node):
            self.idle[GPU_ROW, node.column] -= 1

    def _give_idle_gpu(self, node: NodeInfo) -> None:
        if node.gpu_count >= int(self.idle[GPU_ROW, node.column]) + self._used_gpus(node):
            self.idle[GPU_ROW, node.column] += 1

    def _add_shared(self, task: TaskInfo, node: NodeInfo, group: str) -> None:
        shared, column = node.shared, node.column
        memory = task_gpu_memory(task.request, node.gpu_memory_mib)
        shared.used[group] = shared.used.get(group, 0) + memory
        if task.status is PodStatus.RELEASING:
            shared.releasing[group] = shared.releasing.get(group, 0) + memory
            shared.allocated[group] = shared.allocated.get(group, 0) + memory
            if shared.used[group] == shared.releasing[group]:
                if group not in shared.marked_releasing:
                    self.releasing[GPU_ROW, column] += 1
                    shared.marked_releasing.add(group)
                self._take_idle_gpu(node)
        elif task.status is PodStatus.PIPELINED:
            shared.releasing[group] = shared.releasing.get(group, 0) - memory
            if shared.used[group] - memory == shared.releasing[group] + memory:
                self.releasing[GPU_ROW, column] -= 1
        else:
            shared.allocated[group] = shared.allocated.get(group, 0) + memory
            if shared.used[group] <= memory:
                self._take_idle_gpu(node)
            if group in shared.marked_releasing:
                self.releasing[GPU_ROW, column] -= 1
                shared.marked_releasing.discard(group)

    def _remove_shared(self, task: TaskInfo, node: NodeInfo, group: str) -> None:
        shared, column = node.shared, node.column
        memory = task_gpu_memory(task.request, node.gpu_memory_mib)
        shared.used[group] = shared.used.get(group, 0) - memory
        if task.status is PodStatus.RELEASING:
            shared.releasing[group] = shared.releasing.get(group, 0) - memory
            shared.allocated[group] = shared.allocated.get(group, 0) - memory
            if shared.used[group] <= 0:
                self._give_idle_gpu(node)
                if group in shared.marked_releasing:
                    self.releasing[GPU_ROW, column] -= 1
                    shared.marked_releasing.discard(group)
        elif task.status is PodStatus.PIPELINED:
            shared.releasing[group] = shared.releasing.get(group, 0) + memory
            used_before = shared.used[group] + memory
            releasing_before = shared.releasing[group] - memory
            if used_before == releasing_before or (shared.used[group] == 0 and shared.releasing[group] == 0):
                self.releasing[GPU_ROW, column] += 1
        else:
            shared.allocated[group] = shared.allocated.get(group, 0) - memory
            if shared.used[group] <= 0:
                self._give_idle_gpu(node)
            if shared.releasing_from_shared_tasks(group) and group not in shared.marked_releasing:
                self.releasing[GPU_ROW, column] += 1
                shared.marked_releasing.add(group)

    def save(self, info: NodeInfo) -> NodeState:
        """The node's accounting now (on every statement operation: kept cheap, a node without shared GPUs or
        legacy MIG tasks copies only its column)."""
        column, shared = info.column, info.shared
        return NodeState(
            info,
            self.idle[:, column].copy(),
            self.used[:, column].copy(),
            self.releasing[:, column].copy(),
            shared.copy() if shared.used or shared.allocated or shared.releasing or shared.marked_releasing else None,
            frozenset(info.legacy_mig_tasks) if info.legacy_mig_tasks else NO_TASKS,
            column in self.shared_columns,
            dict(info.dra_refs) if info.dra_refs else None,
        )

    def restore(self, state: NodeState) -> None:
        """Puts a node's accounting back as ``save`` found it (its tasks are the caller's): exact where the
        shared-GPU arithmetic of ``remove_task`` is not the inverse of ``add_task`` in every order. A state is
        restored once at most (its operation is gone after the rollback), so its parts are taken, not copied."""
        info, column = state.info, state.info.column
        self._changes.append(column)
        self.idle[:, column] = state.idle
        self.used[:, column] = state.used
        self.releasing[:, column] = state.releasing
        info.shared = state.shared if state.shared is not None else SharedGpus()
        info.legacy_mig_tasks = set(state.legacy_mig_tasks)
        info.dra_refs = state.dra_refs if state.dra_refs is not None else {}
        if state.has_shared:
            self.shared_columns.add(column)
        else:
            self.shared_columns.discard(column)

    @property
    def version(self) -> int:
        return len(self._changes)

    def changes_since(self, version: int) -> list[int]:
        """The columns changed after ``version`` (with repeats), for structures kept in step with the table."""
        return self._changes[version:]

    def _account(self, task: TaskInfo, node: NodeInfo, sign: float) -> None:
        column = node.column
        self._changes.append(column)
        vec = _tracked(task)
        if task.dra_devices and vec[GPU_ROW] > 0:
            counted = min(_count_dra_refs(node.dra_refs, task.dra_devices, sign), vec[GPU_ROW])
            if counted:
                vec = vec.copy()
                vec[GPU_ROW] -= counted
        self.used[:, column] += sign * vec
        if task.status is PodStatus.RELEASING:
            self.releasing[:, column] += sign * vec
            self.idle[:, column] -= sign * vec
        elif task.status is PodStatus.PIPELINED:
            self.releasing[:, column] -= sign * vec
        else:
            self.idle[:, column] -= sign * vec

    def non_allocated(self) -> Matrix:
        """Idle plus releasing resources of every node: what a pipelined task may wait for."""
        if self._non_allocated is None or self._non_allocated[0] != self.version:
            self._non_allocated = (self.version, self.idle + self.releasing)
        return self._non_allocated[1]

    def short_of(self, task: TaskInfo) -> npt.NDArray[np.bool_]:
        """Per resource row and node, whether the task asks for more than the node's idle and releasing amount: what
        a task that fits nowhere is told, for each of the thousands that wait, on a table that mostly stays as it
        is (kept per request until the table changes)."""
        key = task.req_vec.tobytes()
        cached = self._short_cache.get(key)
        if cached is None or cached[0] != self.version:
            if len(self._short_cache) >= SHORT_CACHE_LIMIT:
                self._short_cache.clear()
            cached = self._short_cache[key] = (self.version, task.req_vec[:, None] > self.non_allocated() + 1e-9)
        return cached[1]

    def fits(self, task: TaskInfo, available: Matrix) -> Mask:
        """Nodes whose ``available`` resources hold the task (KAI's isTaskAllocatableOnNonAllocatedResources)."""
        rows = np.flatnonzero(task.req_vec)
        if task.dra_devices:
            available = available.copy()
            available[GPU_ROW] += self._held_dra_gpus(task)
        fits: Mask = np.all(task.req_vec[rows, None] <= available[rows] + 1e-9, axis=0)
        request = task.request
        if not request.is_shared_gpu:
            return fits
        whole = np.floor(available[GPU_ROW] + 1e-9) + self.shared_fit_counts(task)
        valid = np.array([valid_portion(request, info.gpu_memory_mib) for info in self.infos], dtype=bool)
        result: Mask = fits & valid & (whole >= request.gpu_devices)
        return result

    def fits_idle(self, task: TaskInfo) -> Mask:
        """Nodes where the task fits without waiting for releasing pods."""
        if task.request.is_best_effort:
            return np.ones(len(self.infos), dtype=bool)
        return self._cached_fit(task, releasing=False)

    def fits_non_allocated(self, task: TaskInfo) -> Mask:
        """Nodes where the task fits on idle plus releasing resources."""
        return self._cached_fit(task, releasing=True)

    def _cached_fit(self, task: TaskInfo, releasing: bool) -> Mask:
        """Fit masks per distinct request, brought up to date by re-checking only the columns that changed since
        (a cycle places one pod at a time, so this turns an O(nodes) check into O(changes))."""
        if task.request.is_shared_gpu or task.dra_devices:
            return self.fits(task, self.non_allocated() if releasing else self.idle)
        key = (task.req_vec.tobytes(), releasing)
        cached = self._fit_cache.get(key)
        version = self.version
        if cached is None:
            rows = np.flatnonzero(task.req_vec)
            cached = (version, self.fits(task, self.non_allocated() if releasing else self.idle), rows[:, None])
        elif 4 * (version - cached[0]) > len(self.infos):
            cached = (version, self.fits(task, self.non_allocated() if releasing else self.idle), cached[2])
        elif cached[0] != version:
            mask = cached[1].copy()
            rows = cached[2]
            columns = np.fromiter(set(self._changes[cached[0] :]), dtype=np.intp)
            available = self.idle[rows, columns] + (self.releasing[rows, columns] if releasing else 0.0)
            mask[columns] = (task.req_vec[rows] <= available + 1e-9).all(axis=0)
            cached = (version, mask, rows)
        else:
            return cached[1]
        self._fit_cache[key] = cached
        return cached[1]

    def _held_dra_gpus(self, task: TaskInfo) -> npt.NDArray[np.float64]:
        """Per node, how many of the task's DRA devices another task there already counts: it needs no GPU for them."""
        held = np.zeros(len(self.infos))
        for info in self.infos:
            if info.dra_refs:
                own = 1 if task.key in info.tasks else 0  # a victim placed again does not share with itself
                held[info.column] = sum(1 for device in task.dra_devices if info.dra_refs.get(device, 0) > own)
        return held

    def idle_or_releasing_gpus(self, info: NodeInfo) -> tuple[float, float]:
        """GPUs (and their MiB) of a node that are free or being freed: whole GPUs and MIG slices, the free part of
        shared GPUs and memory released by shared pods (KAI's GetSumOfIdleGPUs + GetSumOfReleasingGPUs)."""
        column = info.column
        whole = self.idle[GPU_ROW, column] + self.releasing[GPU_ROW, column]
        for row, portion in self.mig_rows:
            whole += portion * (self.idle[row, column] + self.releasing[row, column])
        gpu_memory = info.gpu_memory_mib
        gpus, memory = float(whole), float(int(whole) * gpu_memory)
        shared = info.shared
        for group, allocated in shared.allocated.items():
            if allocated > 0:
                gpus += 1 - allocated / gpu_memory
                memory += gpu_memory - allocated
            released = shared.releasing.get(group, 0)
            if released > 0 and not shared.releasing_from_shared_tasks(group):
                gpus += released / gpu_memory
                memory += released
        return gpus, memory

    def gpu_use(self) -> tuple[Vector, Vector]:
        """Per node (column): its GPUs and the GPUs its pods hold, both counting MIG slices as GPUs and a shared
        GPU as the part of its memory its pods hold (a copy: the table goes on changing)."""
        gpus = self.allocatable[GPU_ROW].copy()
        held = self.used[GPU_ROW].copy()
        for row, portion in self.mig_rows:
            gpus += portion * self.allocatable[row]
            held += portion * self.used[row]
        for column in self.shared_columns:
            info = self.infos[column]
            if info.gpu_memory_mib > 0:
                held[column] += sum(info.shared.used.values()) / info.gpu_memory_mib
        return gpus, held

    def shared_fit_counts(self, task: TaskInfo) -> npt.NDArray[np.float64]:
        """Per node, how many GPU groups already in use could also hold this shared request."""
        counts = np.zeros(len(self.infos))
        for column in self.shared_columns:
            info = self.infos[column]
            memory = task_gpu_memory(task.request, info.gpu_memory_mib)
            counts[column] = len(info.shared.fitting_groups(memory, info.gpu_memory_mib))
        return counts


def accepted_gpus(task: TaskInfo, node: NodeInfo) -> float:
    """GPUs a placed task holds: whole GPUs, or its devices times its fraction of this node's GPUs."""
    request = task.request
    if request.is_shared_gpu:
        return request.gpu_devices * request_portion(request, node.gpu_memory_mib)
    return request.gpus


def _count_dra_refs(refs: dict[Device, int], devices: tuple[Device, ...], sign: float) -> int:
    """Adds (``sign`` 1) or drops (-1) one holder of each device; returns how many of them another holder counts
    (before an add, or still after a drop), which this task's GPUs must then leave out."""
    counted = 0
    for device in devices:
        holders = refs.get(device, 0)
        if sign > 0:
            counted += holders > 0
            refs[device] = holders + 1
        else:
            counted += holders > 1
            if holders > 1:
                refs[device] = holders - 1
            else:
                refs.pop(device, None)
    return counted


def _tracked(task: TaskInfo) -> Vector:
    """The resources a task holds on its node; a reservation pod's GPU is charged through the pods sharing it."""
    if task.pod.is_reservation and task.req_vec[GPU_ROW]:
        vec = task.req_vec.copy()
        vec[GPU_ROW] = 0.0
        return vec
    return task.req_vec
