"""The changes of a what-if run, from a small YAML file (docs/what-if.md) or the command line, checked up front.

Every problem is one ``ChangeError`` naming the file (or option), the field and what is allowed, so a mistyped
change stops the run before any cycle, never with a traceback.
"""

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kai.cluster.yamlfile import YamlFileError, read_documents
from kai.core.config import parse_config
from kai.core.model.errors import InvalidObject
from kai.core.plugins.nodeplacement import STRATEGIES

QUEUE_RESOURCES = ("gpu", "cpu", "memory")
QUEUE_FIELDS = ("quota", "limit", "overQuotaWeight")
PLACEMENT_KINDS = ("gpu", "cpu")
TOP_KEYS = ("queues", "nodes", "pods", "scheduler", "submit")
NODE_KEYS = ("add", "remove")
POD_KEYS = ("evict",)
SCHEDULER_KEYS = ("actions", "tiers", "placement")


class ChangeError(ValueError):
    """A change that cannot be made: one line naming where it was given and the field."""


@dataclass(frozen=True)
class QueueChange:
    queue: str
    field: tuple[str, ...]
    """``(resource, quota|limit|overQuotaWeight)`` or ``("priority",)``: the path under the Queue's spec."""
    value: float


@dataclass(frozen=True)
class NodeAddition:
    like: str
    count: int


@dataclass
class Changes:
    queues: list[QueueChange] = field(default_factory=list)
    add_nodes: list[NodeAddition] = field(default_factory=list)
    remove_nodes: list[str] = field(default_factory=list)
    evict_pods: list[str] = field(default_factory=list)
    """``namespace/name`` of running pods sent back to pending (moved: their controllers re-create them)."""
    actions: str | None = None
    tiers: list[Any] | None = None
    placement: dict[str, str] = field(default_factory=dict)
    submit: list[Any] = field(default_factory=list)
    """Kubernetes objects created at the start of the changed run (checked as a scenario's objects are)."""

    @property
    def empty(self) -> bool:
        return not (
            self.queues or self.add_nodes or self.remove_nodes or self.actions or self.tiers or self.placement
        ) and not (self.submit or self.evict_pods)

    def extend(self, other: "Changes") -> None:
        """Add ``other``'s changes (the command line's after the file's: a later setting of a field wins)."""
        self.queues += other.queues
        self.add_nodes += other.add_nodes
        self.remove_nodes += other.remove_nodes
        self.evict_pods += other.evict_pods
        self.actions = other.actions if other.actions is not None else self.actions
        self.tiers = other.tiers if other.tiers is not None else self.tiers
        self.placement.update(other.placement)
        self.submit += other.submit

    def describe(self) -> list[str]:
        """One line per change, for the report."""
        lines = [f"queue {c.queue}: {'.'.join(c.field)} = {c.value:g}" for c in self.queues]
        lines += [f"{a.count} node(s) added like {a.like}" for a in self.add_nodes]
        lines += [f"node {name} removed (its pods back to pending)" for name in self.remove_nodes]
        lines += [f"pod {key} evicted (back to pending)" for key in self.evict_pods]
        if self.actions is not None:
            lines.append(f"actions: {self.actions}")
        if self.tiers is not None:
            lines.append("plugin tiers replaced")
        lines += [f"placement {kind}: {strategy}" for kind, strategy in sorted(self.placement.items())]
        if self.submit:
            lines.append(f"{len(self.submit)} object(s) submitted at the start")
        return lines

    def as_document(self) -> dict[str, Any]:
        """The changes in the change file's schema (``parse_changes`` reads it back as they are)."""
        document: dict[str, Any] = {}
        queues: dict[str, dict[str, Any]] = {}
        for change in self.queues:
            spec = queues.setdefault(change.queue, {})
            value = int(change.value) if change.value.is_integer() else change.value
            if change.field == ("priority",):
                spec["priority"] = value
            else:
                resource, item = change.field
                spec.setdefault(resource, {})[item] = value
        if queues:
            document["queues"] = queues
        nodes: dict[str, Any] = {}
        if self.add_nodes:
            nodes["add"] = [{"like": addition.like, "count": addition.count} for addition in self.add_nodes]
        if self.remove_nodes:
            nodes["remove"] = list(self.remove_nodes)
        if nodes:
            document["nodes"] = nodes
        if self.evict_pods:
            document["pods"] = {"evict": list(self.evict_pods)}
        given: dict[str, Any] = {"actions": self.actions, "tiers": self.tiers}
        scheduler = {key: value for key, value in given.items() if value is not None}
        if self.placement:
            scheduler["placement"] = dict(self.placement)
        if scheduler:
            document["scheduler"] = scheduler
        if self.submit:
            document["submit"] = list(self.submit)
        return document


def read_changes(path: Path) -> Changes:
    """The what-if file at ``path``."""
    where = f"what-if file {path}"
    try:
        documents = read_documents(path)
    except YamlFileError as error:
        raise ChangeError(str(error)) from error
    if len(documents) != 1 or not isinstance(documents[0], dict):
        raise ChangeError(f"{where}: expected one mapping with {', '.join(TOP_KEYS)}")
    return parse_changes(documents[0], where)


def parse_changes(raw: dict[str, Any], where: str) -> Changes:
    _known(raw, TOP_KEYS, where, "")
    changes = Changes()
    for name, spec in _mapping(raw.get("queues"), where, "queues").items():
        for key, value in _mapping(spec, where, f"queues.{name}").items():
            if key == "priority":
                amount = _number(value, f"{where}: field queues.{name}.priority")
                changes.queues.append(QueueChange(str(name), ("priority",), amount))
                continue
            if key not in QUEUE_RESOURCES:
                allowed = ", ".join((*QUEUE_RESOURCES, "priority"))
                raise ChangeError(f"{where}: field queues.{name}.{key}: unknown; allowed: {allowed}")
            for item, amount in _mapping(value, where, f"queues.{name}.{key}").items():
                changes.queues.append(_queue_change(str(name), key, str(item), amount, f"{where}: field "))
    nodes = _mapping(raw.get("nodes"), where, "nodes")
    _known(nodes, NODE_KEYS, where, "nodes.")
    for i, entry in enumerate(_list(nodes.get("add"), where, "nodes.add")):
        at = f"nodes.add[{i}]"
        spec = _mapping(entry, where, at)
        _known(spec, ("like", "count"), where, f"{at}.")
        like = spec.get("like")
        if not isinstance(like, str) or not like:
            raise ChangeError(f"{where}: field {at}.like: expected the name of a node to copy")
        count = spec.get("count", 1)
        if isinstance(count, bool) or not isinstance(count, int) or count < 1:
            raise ChangeError(f"{where}: field {at}.count: got {count!r}; expected a whole number of at least 1")
        changes.add_nodes.append(NodeAddition(like, count))
    for i, name in enumerate(_list(nodes.get("remove"), where, "nodes.remove")):
        if not isinstance(name, str) or not name:
            raise ChangeError(f"{where}: field nodes.remove[{i}]: got {name!r}; expected a node name")
        changes.remove_nodes.append(name)
    pods = _mapping(raw.get("pods"), where, "pods")
    _known(pods, POD_KEYS, where, "pods.")
    for i, key in enumerate(_list(pods.get("evict"), where, "pods.evict")):
        changes.evict_pods.append(pod_key(key, f"{where}: field pods.evict[{i}]"))
    scheduler = _mapping(raw.get("scheduler"), where, "scheduler")
    _known(scheduler, SCHEDULER_KEYS, where, "scheduler.")
    try:
        parse_config({k: scheduler[k] for k in ("actions", "tiers") if scheduler.get(k) is not None})
    except InvalidObject as error:
        raise ChangeError(f"{where}: field scheduler.{error.field}: {error.problem}") from error
    changes.actions = scheduler.get("actions")
    changes.tiers = scheduler.get("tiers")
    for kind, strategy in _mapping(scheduler.get("placement"), where, "scheduler.placement").items():
        changes.placement.update(placement(str(kind), strategy, f"{where}: field scheduler.placement."))
    changes.submit = _list(raw.get("submit"), where, "submit")
    return changes


def placement(kind: str, strategy: object, prefix: str) -> dict[str, str]:
    """One placement change (``gpu``/``cpu`` → binpack/spread, the nodeplacement plugin's arguments)."""
    if kind not in PLACEMENT_KINDS:
        raise ChangeError(f"{prefix}{kind}: unknown; allowed: {', '.join(PLACEMENT_KINDS)}")
    if strategy not in STRATEGIES:
        raise ChangeError(f"{prefix}{kind}: got {strategy!r}; allowed: {', '.join(STRATEGIES)}")
    return {kind: str(strategy)}


def parse_set(text: str) -> Changes:
    """``--set queue.<name>.<resource>.<field>=V``, ``--set queue.<name>.priority=V`` or
    ``--set placement.<gpu|cpu>=binpack|spread``."""
    prefix = f"--set {text}: "
    path, sep, value = text.partition("=")
    parts = path.split(".")
    if not sep or not value:
        raise ChangeError(f"{prefix}expected FIELD=VALUE, such as queue.team-a.gpu.quota=4")
    if parts[0] == "placement" and len(parts) == 2:
        return Changes(placement=placement(parts[1], value, prefix + "placement."))
    if parts[0] != "queue" or len(parts) not in (3, 4):
        raise ChangeError(
            f"{prefix}expected queue.<name>.<gpu|cpu|memory>.<quota|limit|overQuotaWeight>, "
            "queue.<name>.priority or placement.<gpu|cpu>"
        )
    if len(parts) == 3:
        if parts[2] != "priority":
            raise ChangeError(f"{prefix}field {parts[2]}: unknown; allowed: priority, or <resource>.<field>")
        return Changes(queues=[QueueChange(parts[1], ("priority",), _number(value, prefix + "priority", text=True))])
    if parts[2] not in QUEUE_RESOURCES:
        raise ChangeError(f"{prefix}resource {parts[2]}: unknown; allowed: {', '.join(QUEUE_RESOURCES)}")
    return Changes(queues=[_queue_change(parts[1], parts[2], parts[3], value, prefix, text=True)])


def parse_add_nodes(text: str) -> Changes:
    """``--add-nodes N:like=<node>``."""
    count, sep, like = text.partition(":like=")
    if not sep or not like or not count.isdigit() or int(count) < 1:
        raise ChangeError(f"--add-nodes {text}: expected N:like=<node>, such as 2:like=gpu-node-1 (N at least 1)")
    return Changes(add_nodes=[NodeAddition(like, int(count))])


def pod_key(text: object, label: str) -> str:
    """A pod named ``namespace/name`` (``--evict-pod``, ``pods.evict``)."""
    namespace, sep, name = text.partition("/") if isinstance(text, str) else ("", "", "")
    if not sep or not namespace or not name or "/" in name:
        raise ChangeError(f"{label}: got {text!r}; expected a pod as namespace/name")
    return f"{namespace}/{name}"


def _queue_change(queue: str, resource: str, item: str, value: object, prefix: str, text: bool = False) -> QueueChange:
    at = f"queue {queue} {resource}.{item}" if text else f"queues.{queue}.{resource}.{item}"
    if item not in QUEUE_FIELDS:
        raise ChangeError(f"{prefix}{at}: unknown; allowed: {', '.join(QUEUE_FIELDS)}")
    amount = _number(value, prefix + at, text)
    if item == "overQuotaWeight" and amount < 0:
        raise ChangeError(f"{prefix}{at}: got {value!r}; expected a weight of 0 or more")
    if item != "overQuotaWeight" and amount < 0 and amount != -1:
        raise ChangeError(f"{prefix}{at}: got {value!r}; expected 0 or more, or -1 (unlimited)")
    return QueueChange(queue, (resource, item), amount)


def _number(value: object, label: str, text: bool = False) -> float:
    """``value`` as a number (from the command line, its text); ``label`` says where it was given."""
    if text and isinstance(value, str):
        try:
            return float(value)
        except ValueError:
            pass
    elif isinstance(value, int | float) and not isinstance(value, bool):
        return float(value)
    raise ChangeError(f"{label}: got {value!r}; expected a number")


def _mapping(value: object, where: str, at: str) -> dict[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise ChangeError(f"{where}: field {at}: expected a mapping, got {type(value).__name__}")
    return value


def _list(value: object, where: str, at: str) -> list[Any]:
    if value is None:
        return []
    if not isinstance(value, list):
        raise ChangeError(f"{where}: field {at}: expected a list, got {type(value).__name__}")
    return value


def _known(raw: dict[str, Any], allowed: tuple[str, ...], where: str, at: str) -> None:
    unknown = sorted(set(raw) - set(allowed))
    if unknown:
        raise ChangeError(f"{where}: field {at}{unknown[0]}: unknown; allowed: {', '.join(allowed)}")
