"""The typed reason a pod fits on no node, and the nearest fix, built only once it has failed everywhere.

KAI's text counts nodes per reason; the typed reason keeps those counts by predicate and looks for the smallest
change that would give the pod a node now, nearest first: a node that has room but refuses the pod for one
placement rule (a port, pod affinity, the queue's share on that node); a node with room behind a static rule (a
taint to tolerate, an affinity to widen, a node to become ready); else the node missing the smallest part of the
request, and by how much. All of it is a few array operations over the node table (docs/architecture.md §7), done once
per pod shape and table state: identical pods failing at the same state share the result (``Session.fix_cache``).
"""

from collections.abc import Hashable, Mapping, Sequence

import numpy as np

from kai.core.framework.session import Exclusion, Session
from kai.core.model import names
from kai.core.state.fit_errors import TaskFitErrors
from kai.core.state.gpu_sharing import task_gpu_memory
from kai.core.state.node_table import Mask
from kai.core.state.reasons import (
    QUANTITIES,
    Evidence,
    Fix,
    FixKind,
    Predicate,
    Reason,
    ReasonKind,
    Refusal,
    amount,
    predicate_of,
)
from kai.core.state.resource_index import CPU_ROW, GPU_ROW, MEMORY_ROW
from kai.core.state.task import TaskInfo

_STATIC_FIXES = {
    Predicate.TAINT: FixKind.TOLERATE_TAINT,
    Predicate.NODE_AFFINITY: FixKind.MATCH_NODE,
    Predicate.NOT_READY: FixKind.WAIT_FOR_NODE,
}
_DISPLAY = {CPU_ROW: QUANTITIES[0], MEMORY_ROW: QUANTITIES[1], GPU_ROW: QUANTITIES[2]}


_EVERYWHERE = {
    Predicate.TOO_LARGE: ReasonKind.TOO_LARGE,
    Predicate.DRA: ReasonKind.DRA,
    Predicate.CONFIG_MAP: ReasonKind.CONFIG_MAP,
}


def refused_everywhere(refusal: str, pod: str) -> Reason:
    """A pre-predicate's refusal: the pod is larger than any node, its DRA claims cannot be used, or its ConfigMaps
    do not exist."""
    kind = _EVERYWHERE.get(predicate_of(refusal))
    if kind is None or not isinstance(refusal, Refusal):
        return Reason(ReasonKind.UNKNOWN, {"pod": pod, "text": str(refusal)})
    evidence = {"pod": pod, **{k: v for k, v in refusal.evidence.items() if k != "fix"}}
    if kind is ReasonKind.TOO_LARGE:
        cap = {key: evidence[key] for key in ("resource", "unit", "largest")}
        return Reason(kind, evidence, (Fix(FixKind.REQUEST_AT_MOST, cap),))
    fix = own_fix(refusal)
    return Reason(kind, evidence, (fix,) if fix is not None else ())


def own_fix(refusal: str) -> Fix | None:
    """The fix a refusal names for itself (its ``fix`` evidence), with the rest of its evidence."""
    if not isinstance(refusal, Refusal) or "fix" not in refusal.evidence:
        return None
    evidence: Evidence = {k: v for k, v in refusal.evidence.items() if k != "fix"}
    return Fix(FixKind(refusal.evidence["fix"]), evidence)


def node_fit_reason(
    ssn: Session,
    task: TaskInfo,
    candidates: Mask,
    excluded: Sequence[Exclusion],
    fit_errors: TaskFitErrors,
) -> Reason:
    """Why ``task`` fits on none of ``candidates``: the nodes per predicate and the nearest fixes."""
    shared = task.request.is_shared_gpu
    evidence: dict[str, object] = {
        "pod": task.key,
        "nodes": int(candidates.sum()),
        "predicates": sorted(
            ({"predicate": predicate_of(t).value, "nodes": n, "text": str(t)} for t, n in fit_errors.counts.items()),
            key=lambda entry: (-int(entry["nodes"]), str(entry["text"])),
        ),
    }
    key: Hashable = (
        task.req_vec.tobytes(),
        task.request.gpu_kind,
        task.request.gpu_portion,
        task.request.gpu_memory_mib,
        candidates.tobytes(),
        tuple(id(exclusion) for exclusion in excluded),
        tuple(fit_errors.nodes.items()),
        ssn.nodes.version,
    )
    fixes = ssn.fix_cache.get(key)
    if fixes is None:
        fixes = ssn.fix_cache[key] = _fixes(ssn, task, candidates, excluded, fit_errors)
    if shared:
        evidence["gpuMemoryMiB"] = _shared_request_mib(ssn, task)
        return Reason(ReasonKind.GPU_SHARING, evidence, fixes)
    return Reason(ReasonKind.NODE_FIT, evidence, fixes)


def _fixes(
    ssn: Session, task: TaskInfo, candidates: Mask, excluded: Sequence[Exclusion], fit_errors: TaskFitErrors
) -> tuple[Fix, ...]:
    allowed = candidates.copy()
    for exclusion in excluded:
        allowed &= exclusion.allowed
    room = ssn.nodes.fits_non_allocated(task)
    fixes = [*_dynamic_fixes(fit_errors.nodes), *_static_fixes(ssn, excluded, candidates & room)]
    shortfall = _shortfall(ssn, task, allowed)
    if shortfall is not None:
        fixes.append(shortfall)
    if task.request.is_shared_gpu:
        gpu = _gpu_memory_fix(ssn, task, allowed & ~room)
        if gpu is not None:
            fixes.append(gpu)
    return tuple(fixes)


def gang_short(reason: Reason, found: int, required: int, subgroup: str) -> Reason:
    """A gang that found room for ``found`` of its ``required`` pods; ``reason`` is why the next one fit nowhere."""
    shown = "" if subgroup == names.DEFAULT_SUBGROUP else subgroup
    evidence = {"found": found, "required": required, "short": required - found, "subgroup": shown}
    return Reason(ReasonKind.GANG_SHORT, evidence, children=(reason,))


def _dynamic_fixes(first_nodes: Mapping[str, str]) -> list[Fix]:
    """Nodes with room that a placement rule refused: resolving that rule on one of them is the nearest fix."""
    fixes = []
    for text, node in first_nodes.items():
        fix = own_fix(text)
        if fix is None:
            fix = Fix(FixKind.RESOLVE_ON_NODE, {"node": node, "predicate": predicate_of(text).value, "text": str(text)})
        fixes.append(fix)
    return fixes


def _static_fixes(ssn: Session, excluded: Sequence[Exclusion], with_room: Mask) -> list[Fix]:
    """Nodes with room that a static rule excludes, one fix per rule, the rule opening the most nodes first."""
    found: list[tuple[int, Fix]] = []
    for exclusion in excluded:
        for text, mask in exclusion.by_reason:
            opened = mask & with_room
            count = int(opened.sum())
            if not count:
                continue
            node = ssn.nodes.infos[int(np.flatnonzero(opened)[0])].name
            predicate = predicate_of(text)
            kind = _STATIC_FIXES.get(predicate, FixKind.RESOLVE_ON_NODE)
            evidence = {"node": node, "nodes": count, "predicate": predicate.value, "text": str(text)}
            if isinstance(text, Refusal):
                evidence.update(text.evidence)
            found.append((count, Fix(kind, evidence)))
    return [fix for _, fix in sorted(found, key=lambda item: -item[0])]


def _shortfall(ssn: Session, task: TaskInfo, allowed: Mask) -> Fix | None:
    """The allowed node missing the smallest share of the request, with what it lacks per resource."""
    columns = np.flatnonzero(allowed)
    request = task.req_vec
    rows = np.flatnonzero(request > 0)
    if not columns.size or not rows.size:
        return None
    free = ssn.nodes.non_allocated()[np.ix_(rows, columns)]
    missing = np.maximum(request[rows, None] - free, 0.0)
    share = (missing / request[rows, None]).sum(axis=0)
    if not share.any():
        return None
    best = int(np.argmin(np.where(share > 1e-9, share, np.inf)))
    node = ssn.nodes.infos[int(columns[best])].name
    needs = []
    for position, row in enumerate(rows):
        lack = float(missing[position, best])
        if lack <= 1e-9:
            continue
        name = ssn.nodes.index.names[row]
        resource, unit, scale = _DISPLAY.get(int(row), (name, "pods" if name == names.PODS else "", 1.0))
        needs.append(
            {
                "resource": resource,
                "unit": unit,
                "more": amount(lack, scale),
                "free": amount(float(free[position, best]), scale),
                "requested": amount(float(request[row]), scale),
            }
        )
    return Fix(FixKind.FREE_ON_NODE, {"node": node, "needs": needs})


def _shared_request_mib(ssn: Session, task: TaskInfo) -> int:
    if not len(ssn.nodes):
        return task.request.gpu_memory_mib
    return task_gpu_memory(task.request, int(ssn.nodes.gpu_memory.max()))


def _gpu_memory_fix(ssn: Session, task: TaskInfo, columns_mask: Mask) -> Fix | None:
    """For a fractional or GPU-memory pod: the node whose freest GPU lacks the least memory."""
    nodes = ssn.nodes
    best: tuple[int, str, int, int] | None = None
    for column in np.flatnonzero(columns_mask):
        info = nodes.infos[int(column)]
        gpu_memory = info.gpu_memory_mib
        wanted = task_gpu_memory(task.request, gpu_memory)
        whole = nodes.idle[GPU_ROW, column] + nodes.releasing[GPU_ROW, column]
        shared = info.shared
        free = gpu_memory if whole >= 1 else 0
        for group, allocated in shared.allocated.items():
            free = max(free, gpu_memory - allocated + shared.releasing.get(group, 0))
        lack = wanted - free
        if lack > 0 and (best is None or lack < best[0]):
            best = (lack, info.name, free, wanted)
    if best is None:
        return None
    lack, node, free, wanted = best
    return Fix(FixKind.FREE_GPU_MEMORY, {"node": node, "moreMiB": lack, "freeMiB": free, "wantedMiB": wanted})
