"""kai's words for typed reasons and fixes: the one place they become text (KAI's own texts are ``fit_errors``).

``now`` (when given) turns times into "at 12:05:00Z (in 4m0s)"; numbers are shown as KAI shows quantities.
"""

from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from typing import Any

from kai.core.model.duration import format_duration
from kai.core.model.meta import format_time, untimed
from kai.core.model.text import go_float
from kai.core.state.reasons import Evidence, Fix, FixKind, Reason, ReasonKind


def describe(reason: Reason, now: float | None = None) -> str:
    return _REASONS.get(reason.kind, _unknown)(reason.evidence, now)


def describe_fix(fix: Fix, now: float | None = None) -> str:
    return _FIXES[fix.kind](fix.evidence, now)


def as_json(reason: Reason, now: float | None = None) -> dict[str, Any]:
    """A reason as JSON-ready data, with kai's text for it and its fixes."""
    return {
        "kind": reason.kind.value,
        "text": describe(reason, now),
        "evidence": dict(reason.evidence),
        "fixes": [fix_json(fix, now) for fix in reason.fixes],
        "children": [as_json(child, now) for child in reason.children],
    }


def fix_json(fix: Fix, now: float | None = None) -> dict[str, Any]:
    return {"kind": fix.kind.value, "text": describe_fix(fix, now), "evidence": dict(fix.evidence)}


def when(ts: Any, now: float | None) -> str:
    """A time as "12:05:00Z (in 4m0s)" or "11:59:00Z (1m0s ago)" within a day of ``now``, else in full; on the
    clock of an input that gives no times (``meta.untimed``) only how far from now it is ("in 4m0s", "now"), or
    without ``now`` how far from the start ("+4m0s")."""
    if not isinstance(ts, int | float):
        return str(ts)
    delta = round(ts - now) if now is not None else 0
    relative = f"in {format_duration(delta)}" if delta > 0 else f"{format_duration(-delta)} ago" if delta else "now"
    if untimed(float(ts)) and (now is None or untimed(now)):
        return relative if now is not None else f"+{format_duration(float(ts))}"
    text = format_time(float(ts))
    if now is None:
        return text
    if abs(ts - now) < 86400:
        text = datetime.fromtimestamp(ts, UTC).strftime("%H:%M:%SZ")
    return f"{text} ({relative})"


def _n(value: Any) -> str:
    return go_float(float(value)) if isinstance(value, int | float) else str(value)


_SINGULAR = {"GPUs": "GPU", "cores": "core", "pods": "pod"}


def _amount(value: Any, unit: Any, more: bool = False) -> str:
    """ "2 GPUs", "1 GPU", with ``more``: "1 more GPU"."""
    unit = _SINGULAR.get(str(unit), unit) if value == 1 else unit
    return f"{_n(value)} {'more ' if more else ''}{unit}".rstrip()


def _nodes(count: Any) -> str:
    return f"{count} node" if count == 1 else f"{count} nodes"


def _subgroup(evidence: Evidence) -> str:
    return f" in sub-group {evidence['subgroup']}" if evidence.get("subgroup") else ""


def _unknown(e: Evidence, now: float | None) -> str:
    return str(e.get("text", "")).strip()


def _queue_unusable(e: Evidence, now: float | None) -> str:
    if "problem" not in e:
        return f"queue {e['queue']} does not exist" + (f" (did you mean {e['similar']}?)" if "similar" in e else "")
    return f"queue {e['queue']} cannot be used: field {e['field']}: {e['problem']}"


def _of(e: Evidence, key: str) -> str:
    """An amount of a resource: "8 GPUs", "16 cores", "512 GB of memory", "2 example.com/fpga"."""
    if not e["unit"]:
        return f"{_n(e[key])} {e['resource']}"
    shown = _amount(e[key], e["unit"])
    return shown if e["resource"] in ("GPU", "CPU") else f"{shown} of {e['resource']}"


def _too_large(e: Evidence, now: float | None) -> str:
    return f"pod {e['pod']} asks for {_of(e, 'requested')}; the largest node has {_of(e, 'largest')}"


def _pod_sets(e: Evidence) -> str:
    parts = []
    for entry in e.get("podSets", []):
        where = f"sub-group {entry['subgroup']}" if entry.get("subgroup") else "the gang"
        needs = _amount(entry["minMember"], "pods")
        parts.append(f"{where} needs {needs}, {entry['exist']} exist, {entry['gated']} gated")
    return "; ".join(parts)


def _gang_incomplete(e: Evidence) -> str:
    """Pods missing, or a ``minSubGroup`` no number of pods can reach (KAI's admission text for it)."""
    texts = [f"{text}: the gang can never start" for text in e.get("unreachable", [])]
    if e.get("podSets"):
        texts.insert(0, f"not enough pods exist: {_pod_sets(e)}")
    return "; ".join(texts)


def _gated(e: Evidence, now: float | None) -> str:
    return f"pods held by scheduling gates: {', '.join(e['gatedPods'])} ({_pod_sets(e)})"


def _dra(e: Evidence, now: float | None) -> str:
    problem = e.get("problem")
    if problem == "feature gate off":
        return f"pod {e['pod']} uses resource claims but the {e['gate']} feature gate is off"
    if problem == "claim missing":
        return f"resource claim {e['claim']} does not exist"
    if problem == "claim full":
        return f"resource claim {e['claim']} already has the most users a claim may have ({e['users']})"
    return f"shared GPU resource claim {e['claim']} lacks the label {e.get('label', '')}"


def _bound(e: Evidence, what: str, held: str) -> str:
    return (
        f"queue {e['queue']} would exceed its {e['resource']} {what}: {what} {_amount(e['bound'], e['unit'])}, "
        f"{_n(e['allocated'])} {held}, {_n(e['requested'])} requested"
    )


def _domain(e: Evidence) -> str:
    """A topology domain: "rack1 (k8s.io/rack)", or the whole cluster."""
    return "the cluster" if e["domain"] == "root" else f"{e['domain']} ({e['level']})"


def _topology(e: Evidence, now: float | None) -> str:
    if e.get("missing"):
        return f"topology {e['topology']} does not exist"
    if "domain" in e:
        if "allocatablePods" in e:
            return f"{_domain(e)} has room for {e['allocatablePods']} of the {e['requiredPods']} pods"
        return f"{_domain(e)} has {_n(e['freeGPUs'])} of the {_n(e['requestedGPUs'])} GPUs free"
    level = e.get("requiredLevel") or e.get("preferredLevel")
    what = f"podgroup {e['podgroup']}" + (f", sub-group {e['subgroup']}" if e.get("subgroup") else "")
    return f"no {level} of topology {e['topology']} can hold {what} ({e['domains']} tried)"


def _delay(e: Evidence, now: float | None) -> str:
    return (
        f"within its preemption delay ({format_duration(float(e['delaySeconds']))}): it may not make others be "
        f"evicted before {when(e['until'], now)}"
    )


def _reclaimable(e: Evidence, now: float | None) -> str:
    queues = ", ".join(f"{q['queue']} ({_n(q['gpus'])} GPUs)" for q in e["queues"])
    ends = when(e["until"], now)
    return f"once the preemption delay ends at {ends}, reclaim can take GPUs above fair share from {queues}"


def _protected(e: Evidence, now: float | None) -> str:
    victims = ", ".join(
        f"{v['podgroup']} (queue {v['queue']}, {_n(v['gpus'])} GPUs) until {when(v['until'], now)}"
        for v in e["victims"]
    )
    return f"the jobs it could {e['victims'][0]['action']} from are protected by their min runtime: {victims}"


def _disruption_budgets(e: Evidence, now: float | None) -> str:
    budgets = ", ".join(
        f"{b['budget']} ({b['spec']}: {b['allowed']} more disruption{'' if b['allowed'] == 1 else 's'} allowed, "
        f"{b['wanted']} wanted)"
        for b in e["budgets"]
    )
    return f"the pods it could {e['action']} are protected by their PodDisruptionBudgets: {budgets}"


def _eviction_budget(e: Evidence, now: float | None) -> str:
    window = "this cycle" if e["window"] == "cycle" else "in the last minute"
    return (
        f"the scheduler's eviction budget is spent: {e['used']} of {e['cap']} evictions {window}; "
        f"{e['wanted']} more wanted to {e['action']} for it"
    )


def _suspended(e: Evidence, now: float | None) -> str:
    return (
        f"its {e['kind']} {e['workload']} is suspended (evicted by {e['action'] or 'the scheduler'}); "
        "kai resumes it once its pods fit again"
    )


def _fair_share(e: Evidence, now: float | None) -> str:
    return (
        f"queue {e['queue']} may not reclaim: its {_n(e['allocated'])} {e['unit']} allocated plus "
        f"{_n(e['requested'])} requested exceed its {e['resource']} fair share of {_n(e['fairShare'])}"
    )


def _gang_short(e: Evidence, now: float | None) -> str:
    return f"room for {e['found']} of the {e['required']} pods the gang needs{_subgroup(e)}; the next pod fits nowhere"


def _node_fit(e: Evidence, now: float | None) -> str:
    counts = "; ".join(f"{p['nodes']} {p['text']}" for p in e.get("predicates", []))
    shared = f" ({e['gpuMemoryMiB']} MiB of GPU memory per device)" if "gpuMemoryMiB" in e else ""
    where = "the only node" if e["nodes"] == 1 else f"none of the {e['nodes']} nodes"
    return f"pod {e['pod']}{shared} fits {'not on' if e['nodes'] == 1 else 'on'} {where}" + (
        f": {counts}" if counts else ""
    )


_REASONS: Mapping[ReasonKind, Callable[[Evidence, float | None], str]] = {
    ReasonKind.INVALID_OBJECT: lambda e, now: f"kai cannot use {e['object']}: field {e['field']}: {e['problem']}",
    ReasonKind.QUEUE_UNUSABLE: _queue_unusable,
    ReasonKind.TOO_LARGE: _too_large,
    ReasonKind.GANG_INCOMPLETE: lambda e, now: _gang_incomplete(e),
    ReasonKind.SCHEDULING_GATE: _gated,
    ReasonKind.DRA: _dra,
    ReasonKind.CONFIG_MAP: lambda e, now: (
        f"pod {e['pod']} needs ConfigMap {', '.join(e['configMaps'])}, which does not exist in namespace "
        f"{e['namespace']}"
    ),
    ReasonKind.QUEUE_LIMIT: lambda e, now: _bound(e, "limit", "allocated"),
    ReasonKind.NON_PREEMPTIBLE_OVER_QUOTA: lambda e, now: (
        "non-preemptible: " + _bound(e, "quota", "held by non-preemptible pods")
    ),
    ReasonKind.TOPOLOGY: _topology,
    ReasonKind.RECLAIMABLE_AFTER_DELAY: _reclaimable,
    ReasonKind.PREEMPTION_DELAY: _delay,
    ReasonKind.MIN_RUNTIME: _protected,
    ReasonKind.DISRUPTION_BUDGET: _disruption_budgets,
    ReasonKind.EVICTION_BUDGET: _eviction_budget,
    ReasonKind.PREEMPTION_NEVER: lambda e, now: (
        f"its priority class {e['priorityClass']} has preemptionPolicy: Never: it waits for free room and never makes "
        "others be evicted"
    ),
    ReasonKind.QUEUE_ADMISSION: lambda e, now: (
        f"held at the {e['gate']} gate: {e['why']}" if e.get("why") else f"held at the {e['gate']} gate"
    ),
    ReasonKind.SUSPENDED: _suspended,
    ReasonKind.FAIR_SHARE: _fair_share,
    ReasonKind.GANG_SHORT: _gang_short,
    ReasonKind.GPU_SHARING: _node_fit,
    ReasonKind.NODE_FIT: _node_fit,
    ReasonKind.PIPELINED: lambda e, now: f"pipelined: waits for pods being evicted to free {', '.join(e['nodes'])}",
    ReasonKind.UNKNOWN: _unknown,
}


def _needs(e: Evidence) -> str:
    parts = [_amount(n["more"], n["unit"] or n["resource"], more=True) for n in e.get("needs", [])]
    return " and ".join(parts)


def _in_domain(e: Evidence, now: float | None) -> str:
    where = _domain(e)
    if "pods" not in e:
        return f"{_amount(e['moreGPUs'], 'GPUs', more=True)} free in {where}"
    if e["pods"] == 1 and e.get("node"):
        return f"{_needs(e)} free on one node of {where} ({e['node']} comes closest)"
    gpus = f" ({_amount(e['moreGPUs'], 'GPUs', more=True)} free)" if e.get("moreGPUs") else ""
    return f"room for {e['pods']} more pods in {where}{gpus}"


_FIXES: Mapping[FixKind, Callable[[Evidence, float | None], str]] = {
    FixKind.FIX_FIELD: lambda e, now: f"fix {e['object']}, field {e['field']}: {e['problem']}",
    FixKind.CREATE_QUEUE: lambda e, now: (
        f"create queue {e['queue']}" + (f", or name queue {e['similar']} instead" if "similar" in e else "")
    ),
    FixKind.REQUEST_AT_MOST: lambda e, now: (
        f"request at most {_of(e, 'largest')} (the largest node), or add a larger node"
    ),
    FixKind.CREATE_PODS: lambda e, now: f"create {e['count']} more pods{_subgroup(e)}",
    FixKind.REMOVE_GATES: lambda e, now: f"remove the scheduling gates of {', '.join(e['pods'])}",
    FixKind.ENABLE_FEATURE_GATE: lambda e, now: f"enable the scheduler's {e['gate']} feature gate",
    FixKind.CREATE_CLAIM: lambda e, now: f"create resource claim {e['claim']}",
    FixKind.CREATE_CONFIG_MAP: lambda e, now: (
        f"create ConfigMap {', '.join(e['configMaps'])} in namespace {e['namespace']}"
    ),
    FixKind.LABEL_CLAIM: lambda e, now: f"label resource claim {e['claim']} with {e['label']}",
    FixKind.FREE_CLAIM: lambda e, now: f"wait for a user of resource claim {e['claim']} to finish",
    FixKind.RAISE_QUEUE_LIMIT: lambda e, now: (
        f"raise the {e['resource']} limit of queue {e['queue']} by {_amount(e['by'], e['unit'])} (to {_n(e['to'])})"
    ),
    FixKind.RAISE_QUEUE_QUOTA: lambda e, now: (
        f"raise the {e['resource']} quota of queue {e['queue']} by {_amount(e['by'], e['unit'])} (to {_n(e['to'])})"
    ),
    FixKind.MAKE_PREEMPTIBLE: lambda e, now: (
        "make the workload preemptible (spec.preemptibility: preemptible, or a priority class below 100)"
    ),
    FixKind.CREATE_TOPOLOGY: lambda e, now: f"create Topology {e['topology']}, or name an existing one",
    FixKind.FREE_IN_DOMAIN: _in_domain,
    FixKind.RECLAIM_AFTER: lambda e, now: (
        f"wait until {when(e['until'], now)}: then reclaim can take {_amount(e['gpus'], 'GPUs')} "
        f"from queue {e['queue']}"
    ),
    FixKind.WAIT_UNTIL: lambda e, now: f"wait until {when(e['until'], now)}",
    FixKind.WAIT_FOR_JOB: lambda e, now: (
        f"wait for {e['podgroup']} (queue {e['queue']}): its min runtime ends at {when(e['until'], now)}"
    ),
    FixKind.FREE_ON_NODE: lambda e, now: f"{_needs(e)} free on node {e['node']}",
    FixKind.FREE_GPU_MEMORY: lambda e, now: f"{e['moreMiB']} MiB more GPU memory free on one GPU of node {e['node']}",
    FixKind.TOLERATE_TAINT: lambda e, now: (
        f"tolerate taint {e['taint']} ({_nodes(e['nodes'])} with room, e.g. {e['node']})"
    ),
    FixKind.MATCH_NODE: lambda e, now: (
        f"widen the pod's node affinity or selector: {_nodes(e['nodes'])} with room do not match it (e.g. {e['node']})"
    ),
    FixKind.WAIT_FOR_NODE: lambda e, now: (
        f"wait for node {e['node']} to be ready ({_nodes(e['nodes'])} not ready yet would have room)"
    ),
    FixKind.RESOLVE_ON_NODE: lambda e, now: f"on node {e['node']}, which has room: {e['text']}",
    FixKind.WAIT_FOR_EVICTIONS: lambda e, now: f"wait for the evicted pods on {', '.join(e['nodes'])} to terminate",
    FixKind.WAIT_FOR_DISRUPTIONS: lambda e, now: (
        f"wait until PodDisruptionBudget {e['budget']} allows another disruption (its pods healthy again), or relax it"
    ),
    FixKind.WAIT_FOR_EVICTION_BUDGET: lambda e, now: (
        "wait for the next cycle" if e["window"] == "cycle" else "wait until fewer evictions fall in the last minute"
    ),
    FixKind.WAIT_FOR_ROOM: lambda e, now: "wait for room to free up (or give it a priority class that may preempt)",
}
