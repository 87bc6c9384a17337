"""KAI's default grouper: one PodGroup per top owner, gang size 1, and the resolution chains every rule starts from.

- name ``pg-<top owner>-<uid>``, owned by the top owner, in the pod's namespace;
- labels of the top owner (plus the pod's ``user``), its annotations plus ``kai.scheduler/top-owner-metadata``;
- queue: the queue label of the top owner, else of the pod; else ``project`` (``<project>-<node pool>``); else
  ``default-queue``;
- priority class: for each owner from the pod's own owner up, its ``priorityClassName`` label, else the pod's label,
  else the pod's ``spec.priorityClassName``, the first that names an existing PriorityClass; else the owners'
  kinds' defaults from the default-priorities ConfigMap; else the rule's default (``train`` here);
- preemptibility: the ``kai.scheduler/preemptibility`` label of the owners, then of the pod, then the ConfigMap's
  per-kind default; else none (the priority decides);
- preemption delay and staleness grace period from the owners' then the pod's annotations;
- topology from the top owner's annotations.
"""

import json
import re
from collections.abc import Mapping

from kai.components.podgrouper.rules import keys
from kai.components.podgrouper.rules.model import Context, Grouping, KindDefaults, Obj, Topology, Workload
from kai.core.model.duration import format_duration, parse_duration
from kai.core.model.errors import InvalidObject


def podgroup_name(obj: Obj) -> str:
    return f"{keys.PODGROUP_PREFIX}-{obj.name}-{obj.uid}"


def default_grouping(
    workload: Workload, ctx: Context, fallback_priority: str = keys.TRAIN, chain: tuple[Obj, ...] = ()
) -> Grouping:
    """The default grouper's PodGroup; ``chain`` is the owners whose labels decide priority and preemptibility
    (only the top owner unless given: most rules pass none, as KAI's do)."""
    top, pod = workload.top, workload.pod
    owners = chain or (top,)
    warnings: list[InvalidObject] = []
    return Grouping(
        name=podgroup_name(top),
        namespace=pod.namespace,
        owner=top.reference(),
        labels=podgroup_labels(top, pod),
        annotations=podgroup_annotations(top, pod),
        queue=queue(top, pod, ctx),
        priority_class=priority_class(owners, pod, ctx, fallback_priority, warnings),
        preemptibility=preemptibility(owners, pod, ctx, warnings),
        preemption_delay=duration((*owners, pod), keys.PREEMPTION_DELAY_ANNOTATION, warnings, negative=False),
        staleness_grace_period=duration((*owners, pod), keys.STALENESS_ANNOTATION, warnings, negative=True),
        topology=Topology(
            top.annotations.get(keys.TOPOLOGY, ""),
            top.annotations.get(keys.TOPOLOGY_REQUIRED, ""),
            top.annotations.get(keys.TOPOLOGY_PREFERRED, ""),
        ),
        warnings=warnings,
    )


def default_rule(workload: Workload, ctx: Context) -> Grouping:
    """The rule for kinds grouped as they are (StatefulSet, ReplicaSet, …, and any kind without a rule of its own):
    the whole owner chain decides priority and preemptibility."""
    return default_grouping(workload, ctx, chain=workload.owners)


def podgroup_labels(top: Obj, pod: Obj) -> dict[str, str]:
    labels = dict(top.labels)
    if keys.USER not in labels and keys.USER in pod.labels:
        labels[keys.USER] = pod.labels[keys.USER]
    return labels


def podgroup_annotations(top: Obj, pod: Obj) -> dict[str, str]:
    annotations = {keys.USER: pod.annotations[keys.USER]} if keys.USER in pod.annotations else {}
    annotations[keys.TOP_OWNER_ANNOTATION] = top_owner_metadata(top)
    annotations.update(top.annotations)
    return annotations


def top_owner_metadata(top: Obj) -> str:
    """The top owner as the YAML document KAI writes (name, uid, group, version, kind), values quoted when YAML
    would read them as something other than that text."""
    fields = {"name": top.name, "uid": top.uid, "group": top.group, "version": top.version, "kind": top.kind}
    return "".join(f"{key}: {_yaml_text(value)}\n" for key, value in fields.items())


_PLAIN = re.compile(r"[A-Za-z0-9][A-Za-z0-9._/-]*")
_NOT_TEXT = re.compile(
    r"(?i:true|false|yes|no|on|off|y|n|null)|[0-9]{4}-[0-9]{1,2}-[0-9]{1,2}"
    r"|[-+]?(?:[0-9][0-9_]*(?:\.[0-9]*)?(?:[eE][-+]?[0-9]+)?|0x[0-9a-fA-F]+|0o[0-7]+)"
)


def _yaml_text(value: str) -> str:
    """``value`` as a YAML scalar that reads back as this text: plain when YAML would not read it as a number,
    boolean or null, else double-quoted."""
    plain = _PLAIN.fullmatch(value) and not _NOT_TEXT.fullmatch(value)
    return value if plain else json.dumps(value)


def queue(top: Obj, pod: Obj, ctx: Context) -> str:
    label = ctx.settings.queue_label
    for obj in (top, pod):
        if label in obj.labels:
            return obj.labels[label]
    project = next((o.labels[keys.PROJECT_LABEL] for o in (top, pod) if keys.PROJECT_LABEL in o.labels), "")
    if not project:
        return keys.DEFAULT_QUEUE
    node_pool = pod.labels.get(ctx.settings.node_pool_label)
    return f"{project}-{node_pool}" if node_pool is not None else project


def priority_class(
    owners: tuple[Obj, ...], pod: Obj, ctx: Context, fallback: str, warnings: list[InvalidObject]
) -> str:
    """The priority class by the chain above; a name that matches no PriorityClass is skipped with a warning."""
    rejected: list[tuple[str, str]] = []
    for owner in owners:
        candidate, (source, field) = _priority_candidate(owner, pod)
        if candidate and candidate in ctx.priority_classes:
            return candidate
        if candidate and (source.ref, field) not in rejected:
            rejected.append((source.ref, field))
            warnings.append(InvalidObject(source.ref, field, f"{candidate!r} is not a PriorityClass; it is ignored"))
    for owner in owners:
        defaults = ctx.defaults_for(owner)
        if defaults is not None and defaults.priority_class in ctx.priority_classes:
            return defaults.priority_class
    return fallback


def _priority_candidate(owner: Obj, pod: Obj) -> tuple[str, tuple[Obj, str]]:
    """The priority class the chain names at ``owner``, and the object and field that name it."""
    label = f"metadata.labels[{keys.PRIORITY_LABEL}]"
    if keys.PRIORITY_LABEL in owner.labels:
        return owner.labels[keys.PRIORITY_LABEL], (owner, label)
    if keys.PRIORITY_LABEL in pod.labels:
        return pod.labels[keys.PRIORITY_LABEL], (pod, label)
    return pod.get("spec", "priorityClassName").text(), (pod, "spec.priorityClassName")


def preemptibility(owners: tuple[Obj, ...], pod: Obj, ctx: Context, warnings: list[InvalidObject]) -> str:
    """The first valid preemptibility label of the owners, then of the pod, then the owners' kinds' defaults."""
    for obj in (*owners, pod):
        if keys.PREEMPTIBILITY_LABEL in obj.labels:
            value = obj.labels[keys.PREEMPTIBILITY_LABEL]
            if value == "" or value in keys.PREEMPTIBILITIES:
                return value
            field = f"metadata.labels[{keys.PREEMPTIBILITY_LABEL}]"
            warnings.append(InvalidObject(obj.ref, field, f"got {value!r}; allowed: preemptible, non-preemptible"))
    for owner in owners:
        defaults = ctx.defaults_for(owner)
        if defaults is not None and defaults.preemptibility.lower() in keys.PREEMPTIBILITIES:
            return defaults.preemptibility.lower()
    return ""


def duration(objs: tuple[Obj, ...], key: str, warnings: list[InvalidObject], *, negative: bool) -> str | None:
    """The first valid duration annotation of ``objs``, as the PodGroup field writes it."""
    for obj in objs:
        if key not in obj.annotations:
            continue
        text = obj.annotations[key]
        try:
            seconds = parse_duration(text, obj.ref, f"metadata.annotations[{key}]")
        except InvalidObject as error:
            warnings.append(error)
            continue
        if seconds < 0 and not negative:
            warnings.append(
                InvalidObject(obj.ref, f"metadata.annotations[{key}]", f"got {text!r}; must not be negative")
            )
            continue
        return format_duration(seconds)
    return None


def parse_default_priorities(configmap: Obj) -> dict[str, KindDefaults]:
    """The ConfigMap's ``types`` entry: a JSON list of ``{typeName, group, priorityName, preemptibility}``, keyed
    as KAI looks them up (``Kind.group``, or the bare kind for the core group)."""
    data = configmap.get("data")
    text = data.get("types")
    if not text.present:
        raise InvalidObject(configmap.ref, "data.types", "is required: a JSON list of per-kind defaults")
    try:
        entries = json.loads(text.text())
    except json.JSONDecodeError as error:
        raise InvalidObject(configmap.ref, "data.types", f"is not JSON: {error}") from None
    if not isinstance(entries, list):
        raise InvalidObject(configmap.ref, "data.types", "must be a JSON list of per-kind defaults")
    defaults: dict[str, KindDefaults] = {}
    for i, entry in enumerate(entries):
        if not isinstance(entry, Mapping) or not all(isinstance(v, str) for v in entry.values()):
            raise InvalidObject(
                configmap.ref, f"data.types[{i}]", "must be an object of typeName, group, priorityName, preemptibility"
            )
        kind, group = entry.get("typeName", ""), entry.get("group", "")
        defaults[f"{kind}.{group}" if group else kind] = KindDefaults(
            entry.get("priorityName", ""), entry.get("preemptibility", "")
        )
    return defaults
