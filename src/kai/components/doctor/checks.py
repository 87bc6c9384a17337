"""The doctor's checks: each a pure function of objects read from the cluster, returning findings.

NVCF's texts (docs.nvidia.com/nvcf, "KAI Scheduler Integration Guide", troubleshooting table; NVCA's
``kai-scheduler-queues`` health component): kai's messages contain the table's key phrases ("KAI Scheduler is not
installed", "either one or both were not found", "Queue hierarchy misconfigured", "resource violation for queue")
and the resource-violation line is NVCA's own format; the rest of each sentence is kai's.
"""

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from kai.core.model import names
from kai.core.model.errors import InvalidObject
from kai.core.model.meta import Raw, parse_time
from kai.core.model.objects import Queue, parse_node, parse_queue
from kai.core.model.text import go_float
from kai.core.state.queue_tree import queue_tree_problems

OK, WARNING, ERROR = "ok", "warning", "error"
PARENT_QUEUE, CHILD_QUEUE = "default-parent-queue", "default-queue"
SCHEDULING_CRDS = (
    "queues.scheduling.run.ai",
    "podgroups.scheduling.run.ai",
    "bindrequests.scheduling.run.ai",
    "topologies.kai.scheduler",
)
OPERATOR_CRDS = ("configs.kai.scheduler", "schedulingshards.kai.scheduler")
RESOURCES = (("CPU", "cpu"), ("GPU", "gpu"), ("Memory", "memory"))
CRD_UNITS = {"gpu": (1.0, "GPUs"), "cpu": (1.0, "millicores"), "memory": (float(names.MEGABYTE), "MB")}
MAX_LISTED = 20


@dataclass(frozen=True, slots=True)
class Finding:
    check: str
    level: str
    message: str


def crds(installed: Iterable[str]) -> list[Finding]:
    have = set(installed)
    missing = [name for name in SCHEDULING_CRDS if name not in have]
    if missing:
        return [
            Finding(
                "crds",
                ERROR,
                f"KAI Scheduler is not installed: the CRDs {', '.join(missing)} are missing. Install it with "
                "`helm upgrade -i kai-scheduler <chart> -n kai-scheduler --create-namespace`",
            )
        ]
    findings = [Finding("crds", OK, f"KAI's CRDs are installed ({', '.join(SCHEDULING_CRDS)})")]
    absent = [name for name in OPERATOR_CRDS if name not in have]
    if absent:
        findings.append(
            Finding("crds", WARNING, f"{', '.join(absent)} not installed: no operator (fine for a local `kai all`)")
        )
    return findings


def nvca_queues(queues: Mapping[str, Raw], unlimited: bool) -> list[Finding]:
    """NVCA's check: the default queues exist and are linked; with ``unlimited`` (``--nvcf``) each has -1/-1/1."""
    missing = [name for name in (PARENT_QUEUE, CHILD_QUEUE) if name not in queues]
    if missing:
        return [
            Finding(
                "default-queues",
                ERROR,
                f"Queues {PARENT_QUEUE} and {CHILD_QUEUE} are expected: either one or both were not found (missing: "
                f"{', '.join(missing)}). Apply the defaultQueue values (createDefaultQueue: true)",
            )
        ]
    parent = _mapping(queues[CHILD_QUEUE], "spec").get("parentQueue") or ""
    if parent != PARENT_QUEUE:
        return [
            Finding(
                "default-queues",
                ERROR,
                f"Queue hierarchy misconfigured: {CHILD_QUEUE} has parentQueue {parent or '(none)'!r}, expected "
                f"{PARENT_QUEUE}. Correct parentName and childName in the defaultQueue values",
            )
        ]
    findings = []
    if unlimited:
        for name in (PARENT_QUEUE, CHILD_QUEUE):
            findings += _violations(name, queues[name])
    if not findings:
        values = " with quota, limit and overQuotaWeight -1/-1/1" if unlimited else ""
        findings.append(Finding("default-queues", OK, f"{CHILD_QUEUE} is a child of {PARENT_QUEUE}{values}"))
    return findings


def _violations(name: str, queue: Raw) -> list[Finding]:
    """NVCA's rule per resource; an unset field counts as KAI counts it (0)."""
    resources = _mapping(_mapping(queue, "spec"), "resources")
    findings = []
    for label, key in RESOURCES:
        block = _mapping(resources, key)
        got = [block.get(field, 0) for field in ("limit", "quota", "overQuotaWeight")]
        if got != [-1, -1, 1]:
            limit, quota, weight = (go_float(float(v)) if isinstance(v, int | float) else repr(v) for v in got)
            findings.append(
                Finding(
                    "default-queues",
                    ERROR,
                    f"{label} resource violation for queue {name}: expected limit=-1, quota=-1, overQuotaWeight=1, "
                    f"got limit={limit}, quota={quota}, overQuotaWeight={weight}",
                )
            )
    return findings


def _mapping(raw: Raw, key: str) -> Raw:
    value = raw.get(key)
    return value if isinstance(value, dict) else {}


def queue_tree(queues: Mapping[str, Raw]) -> list[Finding]:
    """Queues the scheduler cannot use (the core's parse and queue-tree checks): warnings, as they stop only their
    own workloads, which say so."""
    parsed: dict[str, Queue] = {}
    problems: list[InvalidObject] = []
    for raw in queues.values():
        try:
            queue = parse_queue(raw)
        except InvalidObject as problem:
            problems.append(problem)
        else:
            parsed[queue.name] = queue
    invalid = {str(p.obj).removeprefix("Queue ") for p in problems}
    problems += queue_tree_problems(parsed, invalid).values()
    if not problems:
        return [Finding("queues", OK, f"{len(queues)} queues, every one usable")]
    return [Finding("queues", WARNING, str(problem)) for problem in problems[:MAX_LISTED]]


def capacity(queues: Mapping[str, Raw], nodes: Iterable[Raw]) -> list[Finding]:
    """Quotas no cluster of this size can give: a queue's own, and the top-level queues' together."""
    total: dict[str, float] = {"gpu": 0.0, "cpu": 0.0, "memory": 0.0}
    for raw in nodes:
        try:
            node = parse_node(raw)
        except InvalidObject:
            continue
        if node.ready:
            for key, resource in (("gpu", names.GPU), ("cpu", names.CPU), ("memory", names.MEMORY)):
                total[key] += node.allocatable.get(resource, 0.0)
    parsed = []
    for raw in queues.values():
        try:
            parsed.append(parse_queue(raw))
        except InvalidObject:
            continue
    findings = []
    for key, (unit, label) in CRD_UNITS.items():
        have = f"{go_float(round(total[key] / unit, 3))} {label}"
        for queue in parsed:
            quota = getattr(queue, key).quota
            if quota > total[key]:
                findings.append(
                    Finding(
                        "capacity",
                        WARNING,
                        f"queue {queue.name}: {key} quota {go_float(quota / unit)} is more "
                        f"than the cluster's {have} (ready nodes)",
                    )
                )
        top = [getattr(q, key).quota for q in parsed if not q.parent and getattr(q, key).quota > 0]
        if sum(top) > total[key] and len(top) > 1:
            findings.append(
                Finding(
                    "capacity",
                    WARNING,
                    f"top-level queues: {key} quotas add up to {go_float(sum(top) / unit)}, "
                    f"more than the cluster's {have}",
                )
            )
    return findings[:MAX_LISTED] or [Finding("capacity", OK, "every quota fits the cluster's ready nodes")]


def pending(pods: Iterable[Raw], now: float, longer_than_s: float, scheduler_name: str) -> list[Finding]:
    """kai's pods waiting longer than ``longer_than_s``, with the reason on their PodScheduled condition."""
    waiting = []
    for pod in pods:
        spec, status, meta = pod.get("spec") or {}, pod.get("status") or {}, pod.get("metadata") or {}
        if spec.get("schedulerName") != scheduler_name or spec.get("nodeName") or status.get("phase") != "Pending":
            continue
        try:
            created = parse_time(meta.get("creationTimestamp"), "Pod", "metadata.creationTimestamp")
        except InvalidObject:
            continue
        if now - created < longer_than_s:
            continue
        scheduled: Raw = next((c for c in status.get("conditions") or [] if c.get("type") == "PodScheduled"), {})
        reason = scheduled.get("reason") or "no PodScheduled condition yet"
        message = (scheduled.get("message") or "").strip().splitlines()
        detail = f"{reason}: {message[0]}" if message else reason
        waiting.append((created, f"pod {meta.get('namespace')}/{meta.get('name')} pending for "
                        f"{_duration(now - created)}: {detail}"))  # fmt: skip
    waiting.sort()
    if not waiting:
        return [Finding("pending", OK, f"no kai pod has waited longer than {_duration(longer_than_s)}")]
    findings = [Finding("pending", WARNING, text) for _, text in waiting[:MAX_LISTED]]
    if len(waiting) > MAX_LISTED:
        findings.append(Finding("pending", WARNING, f"… and {len(waiting) - MAX_LISTED} more"))
    return findings


def _duration(seconds: float) -> str:
    minutes, secs = divmod(int(seconds), 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h{minutes:02d}m" if hours else f"{minutes}m{secs:02d}s" if minutes else f"{secs}s"


def deployments(items: Iterable[Raw], namespace: str) -> list[Finding]:
    findings = []
    for deployment in items:
        meta, spec, status = (
            deployment.get("metadata") or {},
            deployment.get("spec") or {},
            deployment.get("status") or {},
        )
        want, have = int(spec.get("replicas", 1)), int(status.get("availableReplicas") or 0)
        level = OK if have >= want else ERROR
        findings.append(Finding("components", level, f"Deployment {namespace}/{meta.get('name')}: {have}/{want} "
                                "replicas available"))  # fmt: skip
    return findings


def probes(results: Iterable[tuple[str, int, str]]) -> list[Finding]:
    """``(url, status, body)`` of each ``/readyz?verbose``; status 0 when nothing answered."""
    findings = []
    for url, code, body in results:
        failing = [line[3:] for line in body.splitlines() if line.startswith("[-]")]
        if code == 200:
            findings.append(Finding("components", OK, f"{url}: ready"))
        else:
            detail = "; ".join(failing) or body.strip() or f"HTTP {code}"
            findings.append(Finding("components", ERROR, f"{url}: not ready: {detail}"))
    return findings


def webhook_configurations(
    found: Mapping[str, Raw], expected: Iterable[str], reached: Mapping[str, str]
) -> list[Finding]:
    """``reached``: per webhook name, "" when it answered an AdmissionReview, else why not."""
    missing = [name for name in expected if name not in found]
    findings = []
    if missing:
        findings.append(Finding("webhooks", WARNING, f"not registered: {', '.join(missing)}; bad objects are not "
                                "refused at admission (kai still reports them on the objects)"))  # fmt: skip
    for name, problem in sorted(reached.items()):
        if problem:
            findings.append(Finding("webhooks", ERROR, f"webhook {name} does not answer: {problem}"))
        else:
            findings.append(Finding("webhooks", OK, f"webhook {name} answers"))
    return findings


def scraped(components: Iterable[str], up: Iterable[tuple[Mapping[str, str], float]], where: str) -> list[Finding]:
    """Each kai component's scrape targets in a Prometheus: ``up`` of the namespace's targets, whose ``job`` is the
    component's ``app`` label (as its ServiceMonitor sets it). A component without a target, or with none up, fails."""
    targets: dict[str, list[float]] = {}
    for labels, value in up:
        targets.setdefault(labels.get("job", ""), []).append(value)
    findings = []
    for component in sorted(components):
        values = targets.get(component, [])
        healthy = sum(1 for value in values if value == 1)
        level, text = OK, f"{component}: scraped by {where}, {healthy}/{len(values)} targets up"
        if not values:
            level = ERROR
            text = (
                f"{component}: no scrape target in {where}: no ServiceMonitor selects it for this Prometheus "
                "(spec.prometheus.enabled and serviceMonitor, and the Prometheus' serviceMonitorSelector, "
                "kai.scheduler/accounting=true)"
            )
        elif not healthy:
            level = ERROR
            text = (
                f"{component}: 0/{len(values)} scrape targets up in {where}: its last scrape failed (is it "
                "running, is its metrics port 8080 reachable?)"
            )
        findings.append(Finding("metrics", level, text))
    return findings
