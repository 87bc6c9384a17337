"""Placing one job's tasks inside a statement (KAI's actions/common/allocate.go), shared by every action.

A job is placed atomically up to its gang sizes: the pod sets that are below their gang size get as many tasks as
they need (one task otherwise); any task that fits nowhere fails the attempt and records why.
"""

from collections.abc import Iterator
from functools import cmp_to_key

import numpy as np

from kai.core.framework.fit_reasons import gang_short, node_fit_reason, refused_everywhere
from kai.core.framework.session import Exclusion, Session
from kai.core.framework.statement import Statement
from kai.core.model import names
from kai.core.state.fit_errors import DEFAULT_POD_ERROR, POD_SCHEDULING_ERRORS, JobFitError, TaskFitErrors
from kai.core.state.gpu_sharing import WHOLE_GPU, task_gpu_memory
from kai.core.state.node_table import Mask, NodeInfo
from kai.core.state.podgroup_info import Member, PodGroupInfo, PodSet, SubGroupSet
from kai.core.state.reasons import Predicate, Reason, ReasonKind, Refusal
from kai.core.state.resource_index import CPU_ROW, GPU_ROW, MEMORY_ROW
from kai.core.state.task import TaskInfo


def _short(resource: str) -> Refusal:
    return Refusal(f"node(s) didn't have enough resources: {resource}", Predicate.RESOURCES, {"resource": resource})


_SHORT_REASONS = {CPU_ROW: _short("CPU cores"), MEMORY_ROW: _short("memory"), GPU_ROW: _short("GPUs")}


def tasks_to_allocate(ssn: Session, job: PodGroupInfo, real_allocation: bool) -> list[TaskInfo]:
    """The next tasks to place, walking the gang tree (KAI's GetTasksToAllocate): a set below its gang takes the
    tasks that bring its most wanted unsatisfied members to theirs; a satisfied set grows by its most wanted member
    that still has tasks (one pod from a satisfied pod set).

    Cached until a task of the job changes status; like KAI, the cache does not distinguish real allocations
    from simulations.
    """
    if job.tasks_to_allocate_cache is None:
        job.tasks_to_allocate_cache = _from_set(ssn, job.root, real_allocation)
    return job.tasks_to_allocate_cache


def _ordered_members(ssn: Session, group: SubGroupSet) -> list[Member]:
    members = group.members()
    return members if len(members) < 2 else sorted(members, key=cmp_to_key(ssn.subgroup_cmp))


def _from_set(ssn: Session, group: SubGroupSet, real_allocation: bool) -> list[TaskInfo]:
    members = _ordered_members(ssn, group)
    if not group.is_min_satisfied():
        tasks: list[TaskInfo] = []
        for member in members[: group.members_to_satisfy]:
            if not member.is_min_satisfied():
                tasks.extend(_from_member(ssn, member, real_allocation))
        return tasks
    for member in members:
        tasks = _from_member(ssn, member, real_allocation)
        if tasks:
            return tasks
    return []


def _from_member(ssn: Session, member: Member, real_allocation: bool) -> list[TaskInfo]:
    if isinstance(member, SubGroupSet):
        return _from_set(ssn, member, real_allocation)
    candidates = [t for t in member.tasks.values() if t.should_allocate(real_allocation)]
    if not candidates:
        return []
    allocated = member.active_allocated
    count = member.min_available - allocated if allocated < member.min_available else 1
    return ssn.ordered_tasks(candidates)[:count]


def init_request(ssn: Session, job: PodGroupInfo | None, real_allocation: bool = False) -> tuple[float, float, float]:
    """(millicores, bytes, GPUs) the next tasks ask for; a gpu-memory request counts as memory / 100 MiB GPUs."""
    if job is None:
        return (0.0, 0.0, 0.0)
    if job.init_request_cache is not None:
        return job.init_request_cache
    cpu = memory = gpu = 0.0
    min_memory = ssn.cluster.min_node_gpu_memory
    for task in tasks_to_allocate(ssn, job, real_allocation):
        if not task.should_allocate(real_allocation):
            continue
        request = task.request
        cpu += request.milli_cpu
        memory += request.memory_bytes
        gpu += task.gpus_quota
        if request.gpu_memory_mib and min_memory > 0:
            gpu += request.gpu_devices * (request.gpu_memory_mib / min_memory)
    job.init_request_cache = (cpu, memory, gpu)
    return job.init_request_cache


def allocate_job(
    ssn: Session, stmt: Statement, job: PodGroupInfo, pipeline_only: bool, nodes: Mask | None = None
) -> bool:
    """Place the job's next tasks on ``nodes`` (all nodes by default); only records why when not simulating."""
    for pre in ssn.pre_job_allocation_fns:
        pre(job)
    tasks = tasks_to_allocate(ssn, job, not pipeline_only)
    if not tasks:
        return False
    over = ssn.job_over_capacity(job, tasks)
    if over is not None:
        if not pipeline_only:
            job.add_fit_error(over)
        return False
    candidates = np.ones(len(ssn.nodes), dtype=bool) if nodes is None else nodes
    return _allocate_set(ssn, stmt, candidates, job, job.root, tasks, pipeline_only)


def _tasks_of(tasks: list[TaskInfo], pod_sets: list[PodSet]) -> list[TaskInfo]:
    wanted = {ps.name for ps in pod_sets}
    return [t for t in tasks if (t.subgroup or names.DEFAULT_SUBGROUP) in wanted]


def _allocate_set(
    ssn: Session,
    stmt: Statement,
    candidates: Mask,
    job: PodGroupInfo,
    subgroup_set: SubGroupSet,
    tasks: list[TaskInfo],
    pipeline_only: bool,
) -> bool:
    """A set of sub-groups: try each candidate node set (topology domains) until all its members that have tasks
    to place fit in one."""
    if not tasks:
        return True
    pod_sets = list(subgroup_set.all_pod_sets())
    if len(pod_sets) > 1:
        wanted = {t.subgroup or names.DEFAULT_SUBGROUP for t in tasks}
        pod_sets = [ps for ps in pod_sets if ps.name in wanted]
    for node_set in ssn.subset_nodes(job, subgroup_set, pod_sets, tasks, candidates):
        checkpoint = stmt.checkpoint()
        if _allocate_members_on(ssn, stmt, node_set, job, subgroup_set, tasks, pipeline_only):
            return True
        stmt.rollback(checkpoint)
    return False


def _allocate_members_on(
    ssn: Session,
    stmt: Statement,
    nodes: Mask,
    job: PodGroupInfo,
    subgroup_set: SubGroupSet,
    tasks: list[TaskInfo],
    pipeline_only: bool,
) -> bool:
    for member in _ordered_members(ssn, subgroup_set):
        if isinstance(member, SubGroupSet):
            placed = _allocate_set(
                ssn, stmt, nodes, job, member, _tasks_of(tasks, list(member.all_pod_sets())), pipeline_only
            )
        else:
            placed = _allocate_pod_set(ssn, stmt, nodes, job, member, _tasks_of(tasks, [member]), pipeline_only)
        if not placed:
            return False
    return True


def _allocate_pod_set(
    ssn: Session,
    stmt: Statement,
    nodes: Mask,
    job: PodGroupInfo,
    pod_set: PodSet,
    tasks: list[TaskInfo],
    pipeline_only: bool,
) -> bool:
    if not tasks:
        return True
    for node_set in ssn.subset_nodes(job, pod_set, [pod_set], tasks, nodes):
        checkpoint = stmt.checkpoint()
        if _allocate_tasks(ssn, stmt, node_set, job, tasks, pipeline_only):
            return True
        stmt.rollback(checkpoint)
    return False


def _allocate_tasks(
    ssn: Session, stmt: Statement, nodes: Mask, job: PodGroupInfo, tasks: list[TaskInfo], pipeline_only: bool
) -> bool:
    for index, task in enumerate(tasks):
        if not allocate_task(ssn, stmt, nodes, job, task, pipeline_only):
            _record_failure(job, task, index)
            return False
    return True


def allocate_task(
    ssn: Session, stmt: Statement, candidates: Mask, job: PodGroupInfo, task: TaskInfo, pipeline_only: bool
) -> bool:
    fit_errors = TaskFitErrors()
    for pre in ssn.pre_predicates:
        error = pre(task, job)
        if error:
            fit_errors.headline = error
            fit_errors.why = refused_everywhere(error, task.key)
            job.task_fit_errors[task.key] = fit_errors
            return False
    nodes = ssn.nodes
    feasible = candidates & nodes.fits_non_allocated(task)
    excluded: list[Exclusion] = []
    for node_filter in ssn.node_filters:
        filtered = node_filter(task, job)
        if filtered is not None:
            excluded.append(filtered)
            feasible &= filtered.allowed
    columns = np.flatnonzero(feasible)
    if columns.size:  # scored only when nodes can take it (most waiting tasks fit nowhere, cycle after cycle)
        idle_fit = nodes.fits_idle(task)
        scored = columns.size > 1 or ssn.node_pre_order_fns
        for column in _by_score(columns, ssn.node_scores(task, candidates) if scored else None):
            node = nodes.infos[column]
            failure = next((r for r in (p(task, job, node) for p in ssn.predicates) if r), None)
            if failure:
                fit_errors.add(failure)
                fit_errors.nodes.setdefault(failure, node.name)
                continue
            if ssn.numa_placement_fn is not None:
                task.numa_placement = ssn.numa_placement_fn(task, node)
            if task.request.is_shared_gpu:
                if _allocate_shared(ssn, stmt, task, node, bool(idle_fit[column]), pipeline_only):
                    return True
                continue
            if idle_fit[column] and not pipeline_only:
                stmt.allocate(task, node.name)
            else:
                stmt.pipeline(task, node.name, update_if_on_node=not pipeline_only)
            return True
    _explain(ssn, task, candidates, excluded, fit_errors)
    job.task_fit_errors[task.key] = fit_errors
    return False


def _by_score(columns: np.ndarray, scores: np.ndarray | None) -> Iterator[int]:
    """Feasible nodes best score first, ties by name (columns are in name order). The best one usually takes the
    task, so it is found with one argmax; the full sort happens only if it is refused. One node needs no scores
    (a victim re-placed in a full cluster often has only its own node; node order functions have no effects)."""
    if scores is None:
        yield int(columns[0])
        return
    best = int(np.argmax(scores[columns]))
    yield int(columns[best])
    order = columns[np.argsort(-scores[columns], kind="stable")]
    yield from (int(column) for column in order if column != columns[best])


def _allocate_shared(
    ssn: Session, stmt: Statement, task: TaskInfo, node: NodeInfo, idle_fit: bool, pipeline_only: bool
) -> bool:
    """Choose GPU groups for a fractional / GPU-memory request (KAI's AllocateFractionalGPUTaskToNode)."""
    nodes, shared, gpu_memory = ssn.nodes, node.shared, node.gpu_memory_mib
    memory = task_gpu_memory(task.request, gpu_memory)
    candidates = shared.fitting_groups(memory, gpu_memory)
    wholes = int(nodes.idle[GPU_ROW, node.column]) + int(nodes.releasing[GPU_ROW, node.column])
    candidates.extend([WHOLE_GPU] * max(wholes, 0))
    scored = sorted(candidates, key=lambda g: -sum(fn(task, node, g) for fn in ssn.gpu_order_fns))
    groups: list[str] = []
    releasing = False
    for group in scored:
        if group == WHOLE_GPU:
            releasing = releasing or pipeline_only or not idle_fit
            groups.append(f"{task.name}-gpu{len(groups)}")
        else:
            releasing = releasing or not shared.enough_idle_on_group(memory, group, gpu_memory) or not idle_fit
            groups.append(group)
        if len(groups) == task.request.gpu_devices:
            if pipeline_only or releasing:
                stmt.pipeline(task, node.name, tuple(groups), update_if_on_node=False)
            else:
                stmt.allocate(task, node.name, tuple(groups))
            return True
    return False


def _explain(
    ssn: Session, task: TaskInfo, candidates: Mask, excluded: list[Exclusion], fit_errors: TaskFitErrors
) -> None:
    """Count nodes per reason, only once a task fits nowhere: a node short of resources reports each missing
    resource (KAI checks resources first); any other node reports the first filter that excluded it. Then the
    typed reason with its nearest fix."""
    nodes = ssn.nodes
    lacking = nodes.short_of(task) & candidates
    short = lacking.any(axis=0)
    for row in np.flatnonzero(lacking.any(axis=1)):
        reason = _SHORT_REASONS.get(int(row)) or _short(nodes.index.names[row])
        fit_errors.add(reason, int(lacking[row].sum()))
    remaining = candidates & ~short
    for exclusion in excluded:
        mask = candidates & ~exclusion.allowed
        fit_errors.add(exclusion.reason, int((remaining & mask).sum()))
        remaining = remaining & ~mask
    fit_errors.why = node_fit_reason(ssn, task, candidates, excluded, fit_errors)


def _record_failure(job: PodGroupInfo, task: TaskInfo, scheduled: int) -> None:
    errors = job.task_fit_errors.get(task.key)
    text = errors.error() if errors is not None else DEFAULT_POD_ERROR
    why = errors.why if errors is not None and errors.why is not None else Reason(ReasonKind.UNKNOWN, {"text": text})
    pod_set = job.pod_set_of(task)
    if not job.is_gang() or pod_set.active_used >= pod_set.min_available:
        message = f"Resources were not found for pod {task.namespace}/{task.name} due to: {text}"
        job.add_fit_error(JobFitError(POD_SCHEDULING_ERRORS, [message], why=why))
        return
    why = gang_short(why, scheduled, pod_set.min_available, pod_set.name)
    if len(job.pod_sets) == 1 and pod_set.name == names.DEFAULT_SUBGROUP:
        message = (
            f"Resources were found for {scheduled} pods while {pod_set.min_available} are required for gang "
            f"scheduling. Additional pods cannot be scheduled due to: {text}"
        )
    else:
        message = (
            f"Resources were found for {scheduled} pods from all sub-groups while sub-group {pod_set.name} "
            f"requires {pod_set.min_available} pods for gang scheduling. Additional pods cannot be scheduled "
            f"in this sub-group due to: {text}"
        )
    job.add_fit_error(JobFitError(POD_SCHEDULING_ERRORS, [message], why=why))
