"""What ``kai explain`` says about a podgroup, a pod or a workload, as data: the CLI renders it and ``-o json``
prints it.

For a podgroup: its pods and what the cycle did with each, KAI's reason and messages, the typed reasons (most
decisive first) and the nearest fix, its place in line (in its queue, its queue among its siblings, up to the top,
and in the whole cluster), an estimated start where one can be known, what the last cycles did for it, and who
last evicted its pods, why and when (the scheduler's record on the PodGroup).
"""

import json
from collections.abc import Mapping
from typing import Any

from kai.components.insight.inspect import Inspection
from kai.components.insight.workload_podgroups import workload_kind, workload_podgroups
from kai.components.scheduler.conditions import DEFAULT_NODE_POOL
from kai.components.scheduler.history import outcome
from kai.core.cycle import typed_reasons
from kai.core.model import names
from kai.core.model.meta import parse_time
from kai.core.state.pod_status import ACTIVE_USED, PodStatus
from kai.core.state.podgroup_info import PodGroupInfo
from kai.core.state.reason_text import as_json, describe_fix, fix_json, when
from kai.core.state.reasons import FixKind, Reason, invalid_object, pipelined
from kai.core.state.task import TaskInfo

WAITING = frozenset({PodStatus.PENDING, PodStatus.GATED})
LEFT_OUT = "left out"
"""The state of a podgroup that used up its scheduling backoff in its pool."""
OTHER_POOL = "other pool"
"""The state of a podgroup of another node pool than the run's (a shard's snapshot)."""
NOT_HERE = frozenset({LEFT_OUT, OTHER_POOL})
"""States of podgroups the run does not schedule: a summary says why."""
TIMED_FIXES = frozenset({FixKind.WAIT_UNTIL, FixKind.RECLAIM_AFTER, FixKind.WAIT_FOR_JOB})
"""Fixes that are a wait with a known end: the start can be estimated."""


class NotFound(LookupError):
    """The object is not in what the cycle saw; the message says what was looked for and where."""


def explain_podgroup(ins: Inspection, key: str, history: dict[str, Any] | None = None) -> dict[str, Any]:
    """``history``: the scheduler's own account of its last cycles (``/get-cycles``), else this run's cycles."""
    job = ins.session.jobs.get(key) or ins.session.cluster.unschedulable_jobs.get(key)
    if job is None:
        if key in ins.state.elsewhere:
            return _left_out(ins, "PodGroup", key, key)
        error = ins.state.invalid.get(("PodGroup", key))
        if error is None:
            raise NotFound(f"podgroup {key} not found in {ins.scenario.name}")
        return _invalid("PodGroup", key, error.field, error.problem, ins.now)
    return _podgroup(ins, job, history)


def explain_workload(ins: Inspection, kind: str, key: str) -> dict[str, Any]:
    """A workload by its kind and name: each of its PodGroups explained (``explain_podgroup``)."""
    namespace, _, name = key.partition("/")
    groups = workload_podgroups(ins.cluster, workload_kind(kind), namespace, name)
    if not groups:
        raise NotFound(
            f"{kind} {key}: no podgroup or pod of it in {ins.scenario.name} (kai sees a workload through its pods, "
            "once its controller has made them and the pod-grouper has grouped them)"
        )
    return {"kind": kind, "name": key, "podgroups": [explain_podgroup(ins, group) for group in groups]}


def explain_pod(ins: Inspection, key: str, history: dict[str, Any] | None = None) -> dict[str, Any]:
    for job in [*ins.session.jobs.values(), *ins.session.cluster.unschedulable_jobs.values()]:
        task = job.tasks.get(key)
        if task is not None:
            own = ins.session.result.pod_reasons.get(key)
            return {
                "kind": "Pod",
                "name": key,
                "podgroup": job.key,
                "reason": as_json(own, ins.now) if own is not None else None,
                "explanation": _podgroup(ins, job, history),
            }
    error = ins.state.invalid.get(("Pod", key))
    if error is not None:
        return _invalid("Pod", key, error.field, error.problem, ins.now)
    pod = ins.state.pods.get(key)
    if pod is None:
        raise NotFound(f"pod {key} not found in {ins.scenario.name}")
    podgroup_key = f"{pod.meta.namespace}/{pod.podgroup_name}"
    if pod.scheduler_name == ins.scenario.config.scheduler_name and podgroup_key in ins.state.elsewhere:
        return _left_out(ins, "Pod", key, podgroup_key)
    if pod.scheduler_name != ins.scenario.config.scheduler_name:
        what = f"pod {key} is scheduled by {pod.scheduler_name or 'the default scheduler'}, not by kai"
    else:
        what = f"pod {key} belongs to no podgroup kai schedules (the pod-grouper has not grouped it)"
    return {"kind": "Pod", "name": key, "state": "not kai's", "summary": what, "reasons": [], "nearestFix": None}


def _left_out(ins: Inspection, kind: str, key: str, podgroup_key: str) -> dict[str, Any]:
    """A podgroup the run leaves out: it used up its ``schedulingBackoff`` in its node pool, or it is another
    pool's."""
    state, its_pool = OTHER_POOL, _pool_of(ins, podgroup_key)
    what = f"podgroup {podgroup_key} is of another node pool than {ins.scenario.config.node_pool}"
    if its_pool is not None:
        what = (
            f"podgroup {podgroup_key} is of node pool {its_pool or DEFAULT_NODE_POOL}, not "
            f"{ins.scenario.config.node_pool}: that pool's scheduler schedules it"
        )
    if podgroup_key in ins.backed_off:
        state = LEFT_OUT
        what = (
            f"podgroup {podgroup_key} was found unschedulable in its node pool and its spec.schedulingBackoff is used "
            "up there: kai leaves it out until it is moved to another pool (its scheduling condition says why it "
            "failed)"
        )
    summary = what if kind == "PodGroup" else f"pod {key}: {what}"
    told: dict[str, Any] = {
        "kind": kind,
        "name": key,
        "state": state,
        "summary": summary,
        "reasons": [],
        "nearestFix": None,
    }
    pool = ins.scenario.node_pool
    if state == OTHER_POOL and its_pool is not None and pool is not None:
        told["partitionLabelValue"] = its_pool
        told["nodePoolLabelKey"] = pool.label_key
    return told


def _pool_of(ins: Inspection, podgroup_key: str) -> str | None:
    """The node-pool label value of a podgroup the run has the object of but leaves to another pool ('' for none);
    None when the run has no pools or no object (a shard's snapshot lists only its own pool's PodGroups), or when no
    pool holds it (its label is there but empty)."""
    podgroup, pool = ins.cluster.get("PodGroup", podgroup_key), ins.scenario.node_pool
    if podgroup is None or pool is None:
        return None
    labels = (podgroup.get("metadata") or {}).get("labels") or {}
    value = labels.get(pool.label_key)
    if value is None:
        return ""
    return str(value) or None


def _invalid(kind: str, key: str, field: str, problem: str, now: float) -> dict[str, Any]:
    reason = invalid_object(f"{kind} {key}", field, problem)
    fix = reason.fix
    return {
        "kind": kind,
        "name": key,
        "state": "invalid",
        "summary": f"kai skips {kind} {key}: field {field}: {problem}",
        "reasons": [as_json(reason, now)],
        "nearestFix": fix_json(fix, now) if fix is not None else None,
    }


def _podgroup(ins: Inspection, job: PodGroupInfo, history: dict[str, Any] | None) -> dict[str, Any]:
    result, now = ins.session.result, ins.now
    placed = {b.pod_key: b.node for b in result.binds if b.podgroup_key == job.key}
    waiting_on = {p.pod_key: p.node for p in result.pipelined if p.podgroup_key == job.key}
    waits = result.unschedulable.get(job.key)
    reasons: list[Reason] = list(waits.reasons) if waits is not None else []
    if waits is None and job.fit_errors and any(t.status in WAITING for t in job.tasks.values()):
        reasons = list(typed_reasons(ins.session, job))  # gated only: KAI reports no condition, only an event
    if waiting_on and waits is None:
        reasons.append(pipelined(waiting_on.values()))
    state = _state(job, placed, waiting_on, bool(reasons) and not waiting_on)
    fix = reasons[0].fix if reasons and reasons[0].fix is not None else next((r.fix for r in reasons if r.fix), None)
    opened = ins.opened.jobs.get(job.key) or ins.opened.cluster.unschedulable_jobs.get(job.key) or job
    return {
        "kind": "PodGroup",
        "name": job.key,
        "queue": job.queue,
        "priority": job.priority,
        "preemptible": job.preemptible,
        "minMember": job.podgroup.min_member,
        "state": state,
        "pods": [
            _pod(task, placed, waiting_on, _own(result.pod_reasons.get(task.key), reasons), now)
            for task in _tasks(opened)
        ],
        "kai": {"reason": waits.reason, "message": waits.message, "detailedMessage": waits.detailed_message.strip()}
        if waits is not None
        else None,
        "reasons": [as_json(reason, now) for reason in reasons],
        "nearestFix": fix_json(fix, now) if fix is not None else None,
        "position": _position(ins, opened),
        "estimatedStart": _start(state, fix, now),
        "lastCycles": _last_cycles(ins, job.key, history),
        "lastEviction": last_eviction(ins.cluster.get("PodGroup", job.key), now),
    }


def last_eviction(podgroup: Mapping[str, Any] | None, now: float) -> dict[str, Any] | None:
    """The scheduler's record of the podgroup's last eviction (who, why, when), with kai's sentence for it; None
    when it has none (or one kai cannot read)."""
    annotations = ((podgroup or {}).get("metadata") or {}).get("annotations") or {}
    try:
        record = json.loads(annotations.get(names.EVICTION_RECORD_ANNOTATION, ""))
        at = parse_time(record["at"], "PodGroup", names.EVICTION_RECORD_ANNOTATION)
    except (ValueError, KeyError, TypeError):
        return None
    by = f" for {record['by']}" if record.get("by") else ""
    why = f": {record['why']}" if record.get("why") else ""
    pods = record.get("pods", 0)
    suspended = f"; {record['suspended']} suspended" if record.get("suspended") else ""
    text = (
        f"evicted at {when(at, now)} by {record.get('action', '?')}{by}{why} ({pods} pod{'s' * (pods != 1)}){suspended}"
    )
    return {**record, "at": at, "text": text}


def _own(reason: Reason | None, podgroup_reasons: list[Reason]) -> Reason | None:
    """A pod's reason when it is its own (the podgroup's headline is told once, above the pods)."""
    return None if reason is None or (podgroup_reasons and reason is podgroup_reasons[0]) else reason


def _tasks(job: PodGroupInfo) -> list[TaskInfo]:
    return sorted(job.tasks.values(), key=lambda task: task.key)


def _state(job: PodGroupInfo, placed: dict[str, str], waiting_on: dict[str, str], waits: bool) -> str:
    if waits:
        return "waiting"
    if placed:
        return "starting"
    if waiting_on:
        return "pipelined"
    if job.tasks and all(task.status in ACTIVE_USED for task in job.tasks.values()):
        return "running"
    if job.tasks and all(task.status is PodStatus.SUCCEEDED for task in job.tasks.values()):
        return "succeeded"
    return "nothing to schedule" if not job.has_pending() else "pending"


def _pod(
    task: TaskInfo, placed: dict[str, str], waiting_on: dict[str, str], reason: Reason | None, now: float
) -> dict[str, Any]:
    if task.key in placed:
        next_cycle = f"placed on {placed[task.key]}"
    elif task.key in waiting_on:
        next_cycle = f"pipelined on {waiting_on[task.key]}"
    else:
        next_cycle = "waits" if task.status is PodStatus.PENDING else ""
    return {
        "name": task.key,
        "status": task.status.value,
        "node": task.node_name,
        "nextCycle": next_cycle,
        "reason": as_json(reason, now) if reason is not None and task.status is PodStatus.PENDING else None,
    }


def _position(ins: Inspection, job: PodGroupInfo) -> dict[str, Any]:
    """Where the job stands in line at the start of the cycle, or why it is not in line."""
    places = ins.order.place(job.key, job.queue)
    if places:
        (queue, place, count), *levels = places
        parents = [level[0] for level in levels[1:]] + [""]
        return {
            "inLine": True,
            "inQueue": {"queue": queue, "place": place, "of": count},
            "queues": [
                {"queue": q, "place": p, "of": n, "under": parent}
                for (q, p, n), parent in zip(levels, parents, strict=True)
            ],
            "cluster": {"place": ins.order.jobs.index(job.key) + 1, "of": len(ins.order.jobs)},
        }
    if job.key in ins.opened.cluster.unschedulable_jobs:
        why = f"its queue {job.queue} cannot be used"
    elif not any(task.status in WAITING for task in job.tasks.values()):
        why = "it has no pending pods"
    elif not job.is_ready_for_scheduling():
        why = "it is not ready: too few of its pods exist or they are gated"
    elif not job.has_pending():
        why = "all its waiting pods are gated"
    else:
        why = "it is beyond the allocate queue depth of its queue"
    return {"inLine": False, "why": why}


def _start(state: str, fix: Any, now: float) -> dict[str, Any]:
    if state == "starting":
        return {"at": now, "basis": "the next cycle binds it (this cycle placed it)"}
    if state == "pipelined":
        return {"at": None, "basis": "once the pods evicted for it are gone"}
    if state != "waiting":
        return {"at": None, "basis": ""}
    if fix is not None and fix.kind in TIMED_FIXES:
        return {"at": fix.evidence["until"], "basis": f"if nothing else changes: {describe_fix(fix, now)}"}
    return {"at": None, "basis": "none known: it needs the nearest fix, or others to finish (kai knows no runtimes)"}


def _last_cycles(ins: Inspection, key: str, history: dict[str, Any] | None) -> dict[str, Any]:
    if history is not None:
        return history
    cycles = [{"cycle": r.number, "at": ins.now, **outcome(r.session.result, key)} for r in ins.cycles]
    return {"source": f"this run of {ins.scenario.name}", "cycles": cycles}
