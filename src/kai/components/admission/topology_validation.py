"""The Topology validating webhook (``/validate-kai-scheduler-v1alpha1-topology``, KAI's ``topologyhooks``): the
levels' rules, also for clusters whose Topology CRD predates their CEL rules: 1 to 16 levels, each with a node
label, node labels unique, ``kubernetes.io/hostname`` only as the lowest level, and (KAI v0.17) level aliases
unique and never equal to a node label; in the words of KAI's CRD and webhook, kai's explanation after them."""

from collections.abc import Mapping

from kai.components.admission.review import Decision, Request, allow, as_stored, deny
from kai.core.model.errors import InvalidObject
from kai.core.model.meta import object_ref
from kai.core.model.objects import parse_topology

HOSTNAME = "kubernetes.io/hostname"
MAX_LEVELS = 16


def validate_topology(request: Request) -> Decision:
    raw = as_stored(request)
    obj = object_ref("Topology", raw)
    try:
        topology = parse_topology(raw)
    except InvalidObject as problem:
        return deny(problem)
    levels = (raw.get("spec") or {}).get("levels") or []
    problems = []
    if not 1 <= len(topology.levels) <= MAX_LEVELS:
        problems.append(
            InvalidObject(obj, "spec.levels", f"has {len(topology.levels)} levels; allowed: 1 to {MAX_LEVELS}")
        )
    labels = set(topology.levels)
    seen: set[str] = set()
    aliases: set[str] = set()
    for i, label in enumerate(topology.levels):
        if label in seen:
            problems.append(
                InvalidObject(
                    obj, f"spec.levels[{i}].nodeLabel", f"{label} repeats a level above", kai="nodeLabel must be unique"
                )
            )
        seen.add(label)
        if label == HOSTNAME and i != len(topology.levels) - 1:
            problems.append(
                InvalidObject(
                    obj,
                    f"spec.levels[{i}].nodeLabel",
                    f"{HOSTNAME} is allowed only as the lowest level",
                    kai=f"the {HOSTNAME} label can only be used at the lowest level of topology",
                )
            )
        alias = levels[i].get("alias") if isinstance(levels[i], Mapping) else None
        if not alias:
            continue
        if alias in aliases:
            kai = f"invalid topology aliases: aliases must be unique within the topology; duplicated: [{alias}]"
            problems.append(
                InvalidObject(obj, f"spec.levels[{i}].alias", f"{alias!r} names another level already", kai=kai)
            )
        elif alias in labels:
            kai = f"invalid topology aliases: an alias must not equal a nodeLabel; conflicting: [{alias}]"
            problems.append(
                InvalidObject(obj, f"spec.levels[{i}].alias", f"{alias!r} is a node label of a level", kai=kai)
            )
        aliases.add(alias)
    return deny("; ".join(str(p) for p in problems)) if problems else allow()
