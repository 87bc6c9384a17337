"""What ``kai explain`` says about a podgroup, a pod or a workload, as data: the CLI renders it and ``-o json``
prints it.

For a podgroup, at the moment the view shows (``inspect.Moment``): its pods and what the last cycle did with each,
KAI's reason and messages, the typed reasons (most decisive first), the fixes proven to start it (``fixes``; searched
when a fix search is given) or what it needs that no such change gives, its place in line (in its queue, its queue
among its siblings, up to the top, and in the whole cluster) with the order key that puts it there, since when it
waits, an estimated start where one can be known, what the last cycles did for it, and who last evicted its pods,
why and when (the scheduler's record on the PodGroup). The numbers are the view's (``pending``): ``kai queues`` and
``kai simulate`` show the same.
"""

import difflib
import json
import re
from collections.abc import Iterable, Mapping
from typing import Any

from kai.components.insight.fixes.found import as_json as fixes_json
from kai.components.insight.inspect import Inspection, Moment
from kai.components.insight.pending import (
    WAITING,
    Line,
    Prove,
    did,
    estimated_start,
    nearest_fix,
    pending_row,
    position,
)
from kai.components.insight.view import order_key_json, position_json
from kai.components.insight.workload_podgroups import (
    nearest_workload,
    unknown_kind,
    workload_kind,
    workload_podgroups,
)
from kai.components.scheduler.conditions import DEFAULT_NODE_POOL
from kai.components.scheduler.history import outcome
from kai.core.model import names
from kai.core.model.meta import parse_time
from kai.core.state.pod_status import PodStatus
from kai.core.state.podgroup_info import PodGroupInfo
from kai.core.state.reason_text import as_json, fix_json, when
from kai.core.state.reasons import Reason, invalid_object
from kai.core.state.task import TaskInfo

LEFT_OUT = "left out"
"""The state of a podgroup that used up its scheduling backoff in its pool."""
OTHER_POOL = "other pool"
"""The state of a podgroup of another node pool than the run's (a shard's snapshot)."""
NOT_HERE = frozenset({LEFT_OUT, OTHER_POOL})
"""States of podgroups the run does not schedule: a summary says why."""
DOUBLED_STOP = re.compile(r"(?<!\.)\.\.(?!\.)")
"""KAI ends a sentence it quotes with its own full stop ("GPUs.."): shown once here, kept in conditions and events."""


class NotFound(LookupError):
    """The object is not in what the cycle saw; the message says what was looked for and where."""


def explain_podgroup(
    ins: Inspection, key: str, history: dict[str, Any] | None = None, prove: Prove | None = None
) -> dict[str, Any]:
    """``history``: the scheduler's own account of its last cycles (``/get-cycles``), else this run's cycles;
    ``prove``: the fix search (``view.PendingView.fixes``)."""
    job = ins.session.jobs.get(key) or ins.session.cluster.unschedulable_jobs.get(key)
    if job is None:
        if key in ins.state.elsewhere:
            return _left_out(ins, "PodGroup", key, key)
        error = ins.state.invalid.get(("PodGroup", key))
        if error is None:
            keys = [*ins.session.jobs, *ins.session.cluster.unschedulable_jobs]
            raise NotFound(f"podgroup {key} not found in {ins.scenario.name}{_did_you_mean(key, keys)}")
        return _invalid("PodGroup", key, error.field, error.problem, ins.now)
    return _podgroup(ins, job, history, prove)


def explain_workload(ins: Inspection, kind: str, key: str, prove: Prove | None = None) -> dict[str, Any]:
    """A workload by its kind and name: each of its PodGroups explained (``explain_podgroup``)."""
    namespace, _, name = key.partition("/")
    unknown = unknown_kind(kind)
    if unknown is not None:
        raise NotFound(f"{unknown} (or give pod or podgroup)")
    groups = workload_podgroups(ins.cluster, workload_kind(kind), namespace, name)
    if not groups:
        close = nearest_workload(ins.cluster, workload_kind(kind), namespace, name)
        raise NotFound(
            f"{kind} {key}: no podgroup or pod of it in {ins.scenario.name}"
            + (
                f"; did you mean {namespace}/{close}?"
                if close
                else " (kai sees a workload through its pods, once its controller has made them and the pod-grouper "
                "has grouped them)"
            )
        )
    return {"kind": kind, "name": key, "podgroups": [explain_podgroup(ins, group, prove=prove) for group in groups]}


def explain_pod(
    ins: Inspection, key: str, history: dict[str, Any] | None = None, prove: Prove | None = None
) -> dict[str, Any]:
    for job in [*ins.session.jobs.values(), *ins.session.cluster.unschedulable_jobs.values()]:
        task = job.tasks.get(key)
        if task is not None:
            own = ins.session.result.pod_reasons.get(key)
            return {
                "kind": "Pod",
                "name": key,
                "podgroup": job.key,
                "reason": as_json(own, ins.now) if own is not None else None,
                "explanation": _podgroup(ins, job, history, prove),
            }
    error = ins.state.invalid.get(("Pod", key))
    if error is not None:
        return _invalid("Pod", key, error.field, error.problem, ins.now)
    pod = ins.state.pods.get(key)
    if pod is None:
        raise NotFound(f"pod {key} not found in {ins.scenario.name}{_did_you_mean(key, ins.state.pods)}")
    podgroup_key = f"{pod.meta.namespace}/{pod.podgroup_name}"
    if pod.scheduler_name == ins.scenario.config.scheduler_name and podgroup_key in ins.state.elsewhere:
        return _left_out(ins, "Pod", key, podgroup_key)
    if pod.scheduler_name != ins.scenario.config.scheduler_name:
        what = f"pod {key} is scheduled by {pod.scheduler_name or 'the default scheduler'}, not by kai"
    else:
        what = f"pod {key} belongs to no podgroup kai schedules (the pod-grouper has not grouped it)"
    return {"kind": "Pod", "name": key, "state": "not kai's", "summary": what, "reasons": [], "needs": None}


def _did_you_mean(key: str, keys: Iterable[str]) -> str:
    close = difflib.get_close_matches(key, sorted(keys), n=1)
    return f"; did you mean {close[0]}?" if close else ""


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
        "needs": None,
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
        "needs": fix_json(fix, now) if fix is not None else None,
    }


def _podgroup(
    ins: Inspection, job: PodGroupInfo, history: dict[str, Any] | None, prove: Prove | None
) -> dict[str, Any]:
    """The podgroup's explanation; one that waits reads its place, order key, wait, needs and fixes from the view's
    row (``pending.pending_row``), so kai queues and kai simulate say the same of it."""
    now = ins.now
    cycle = did(ins, job.key)
    reasons = list(cycle.reasons)
    fix = nearest_fix(reasons)
    shown = ins.shown.jobs.get(job.key) or ins.shown.cluster.unschedulable_jobs.get(job.key) or job
    own = ins.session.result.pod_reasons
    at, basis = estimated_start(cycle.state, fix, now)
    line = Line(ins.order)
    row = pending_row(ins, line, shown, prove) if any(t.status in WAITING for t in shown.tasks.values()) else None
    return {
        "kind": "PodGroup",
        "name": job.key,
        "moment": _moment(ins),
        "queue": job.queue,
        "priority": job.priority,
        "preemptible": job.preemptible,
        "minMember": job.podgroup.min_member,
        "state": cycle.state,
        "pods": [
            _pod(task, cycle.placed, cycle.waiting_on, _own(own.get(task.key), reasons), now)
            for task in sorted(shown.tasks.values(), key=lambda task: task.key)
        ],
        "kai": _kai(ins, job.key),
        "reasons": [as_json(reason, now) for reason in reasons],
        "needs": fix_json(row.needs, now) if row is not None and row.needs is not None else None,
        "fixes": fixes_json(row.fixes, now) if row is not None and row.fixes is not None else None,
        "waitingSince": row.waiting_since if row is not None else None,
        "position": position_json(row.position if row is not None else position(ins, line, shown)),
        "orderKey": order_key_json(row.order_key if row is not None else None),
        "estimatedStart": {"at": at, "basis": basis},
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


def _moment(ins: Inspection) -> str:
    return "as given" if ins.moment is Moment.GIVEN else f"after cycle {ins.cycle}"


def _kai(ins: Inspection, key: str) -> dict[str, str] | None:
    """KAI's reason and messages for the podgroup (its condition's), without the reason repeated at the top of the
    detailed message (KAI's texts stay as KAI writes them in conditions and events)."""
    waits = ins.session.result.unschedulable.get(key)
    if waits is None:
        return None
    detailed = waits.detailed_message.strip().removeprefix(f"{waits.reason}.").strip()
    return {
        "reason": waits.reason,
        "message": DOUBLED_STOP.sub(".", waits.message),
        "detailedMessage": DOUBLED_STOP.sub(".", detailed),
    }


def _own(reason: Reason | None, podgroup_reasons: list[Reason]) -> Reason | None:
    """A pod's reason when it is its own (the podgroup's headline is told once, above the pods)."""
    return None if reason is None or (podgroup_reasons and reason is podgroup_reasons[0]) else reason


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


def _last_cycles(ins: Inspection, key: str, history: dict[str, Any] | None) -> dict[str, Any]:
    if history is not None:
        return history
    cycles = [{"cycle": r.number, "at": ins.now, **outcome(r.session.result, key)} for r in ins.cycles]
    return {"source": f"this run of {ins.scenario.name}", "cycles": cycles}
