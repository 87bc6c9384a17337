"""The PodGroup validating webhook (``/validate-scheduling-run-ai-v2alpha2-podgroup``; KAI's podgroup-controller
serves it from ``pkg/apis/scheduling/v2alpha2/podgroup_webhook.go``), as permissive as KAI v0.17's and in its
words, kai's explanation after them.

Refused, as KAI: duplicate sub-group names, a parent that is not a sub-group, a sub-group cycle, ``minMember``
together with ``minSubGroup`` (on the PodGroup or on a sub-group),
``minSubGroup`` on a leaf sub-group, a leaf without ``minMember``, and ``minMember`` on a sub-group that has
children (a warning on update, so PodGroups made before the rule can still change). Warned: a ``minSubGroup``
larger than the number of direct children (the gang can never start). ``minMember: 0`` and ``minSubGroup: 0`` are
allowed, at any level, as KAI's main allows them since #1989 (v0.17 refused a PodGroup-level ``minSubGroup`` below
1): no gang requirement, every member elastic. Anything else kai's scheduler cannot use is a warning (refused with
``--strict-validation``).
"""

import json
from collections.abc import Mapping, Sequence
from typing import Any

from kai.components.admission.review import Decision, Request, allow, as_stored, deny, unusable
from kai.components.admission.settings import AdmissionSettings
from kai.core.model.errors import InvalidObject
from kai.core.model.meta import object_ref
from kai.core.model.objects import parse_podgroup

STRUCTURE = ("name", "parent")
"""The parser's sub-group fields whose problems KAI refuses too (duplicates, a missing parent, a cycle)."""


def validate_podgroup(request: Request, settings: AdmissionSettings) -> Decision:
    raw = as_stored(request)
    obj = object_ref("PodGroup", raw)
    given = raw.get("spec")
    spec: Mapping[str, Any] = given if isinstance(given, Mapping) else {}
    both = _both(spec, obj)
    if both:
        return deny(both)
    try:
        podgroup = parse_podgroup(raw)
    except InvalidObject as problem:
        if problem.kai and problem.field.rsplit(".", 1)[-1] in STRUCTURE:
            return deny(problem)
        return unusable([problem], settings.strict)
    entries: Sequence[Mapping[str, Any]] = spec.get("subGroups") or []
    children: dict[str, int] = {}
    for sub in podgroup.subgroups:
        if sub.parent:
            children[sub.parent.lower()] = children.get(sub.parent.lower(), 0) + 1
    errors: list[InvalidObject] = []
    warnings: list[str] = []
    roots = sum(1 for sub in podgroup.subgroups if not sub.parent)
    _check_top(spec, roots, obj, errors, warnings)
    for i, (sub, entry) in enumerate(zip(podgroup.subgroups, entries, strict=True)):
        if isinstance(entry, Mapping):
            _check_subgroup(entry, i, sub.name, children.get(sub.name.lower(), 0), request, obj, errors, warnings)
    if errors:
        return deny("; ".join(str(e) for e in errors), *warnings)
    return allow(*warnings)


def _both(spec: Mapping[str, Any], obj: str) -> InvalidObject | None:
    """``minMember`` with ``minSubGroup``: KAI's structural error, checked before everything else."""
    if spec.get("minMember") is not None and spec.get("minSubGroup") is not None:
        return InvalidObject(
            obj,
            "spec.minSubGroup",
            "set together with minMember; allowed: one of the two",
            kai=f"minMember and minSubGroup are mutually exclusive: set minMember ({spec['minMember']}) to schedule "
            "a fixed number of pods, or set minSubGroup to require a minimum number of child SubGroups, but not both",
        )
    for i, entry in enumerate(spec.get("subGroups") or []):
        if isinstance(entry, Mapping) and entry.get("minMember") is not None and entry.get("minSubGroup") is not None:
            return InvalidObject(
                obj,
                f"spec.subGroups[{i}].minSubGroup",
                "set together with minMember; allowed: minMember (a number of pods) or minSubGroup (a number of "
                "child sub-groups), not both",
                kai=f"subgroup {_q(entry.get('name'))}: minMember and minSubGroup are mutually exclusive",
            )
    return None


def _check_top(spec: Mapping[str, Any], roots: int, obj: str, errors: list[InvalidObject], warnings: list[str]) -> None:
    min_subgroup = spec.get("minSubGroup")
    if min_subgroup is None:
        return
    if min_subgroup > roots:
        warnings.append(_too_many(obj, "spec", min_subgroup, roots, ""))


def _check_subgroup(
    entry: Mapping[str, Any],
    i: int,
    name: str,
    children: int,
    request: Request,
    obj: str,
    errors: list[InvalidObject],
    warnings: list[str],
) -> None:
    field = f"spec.subGroups[{i}]"
    min_member, min_subgroup = entry.get("minMember"), entry.get("minSubGroup")
    if not children:
        if min_subgroup is not None:
            kai = f"subgroup {_q(name)}: minSubGroup cannot be set on a leaf SubGroup (no child SubGroups)"
            problem = "is set on a leaf sub-group (it has no child sub-groups); allowed: minMember"
            errors.append(InvalidObject(obj, f"{field}.minSubGroup", problem, kai=kai))
        if min_member is None:
            kai = f"subgroup {name}: minMember is required"
            errors.append(InvalidObject(obj, f"{field}.minMember", "is required on a leaf sub-group", kai=kai))
        return
    if min_member is not None:
        mid_level = InvalidObject(
            obj,
            f"{field}.minMember",
            f"sub-group {name!r} has child sub-groups, so its gang is counted in sub-groups; allowed: minSubGroup "
            "here, minMember on its leaves",
            kai=f"subgroup {_q(name)}: minMember cannot be set on a mid-level SubGroup (has child SubGroups); use "
            "minSubGroup instead",
        )
        if request.operation == "UPDATE":
            warnings.append(str(mid_level))
        else:
            errors.append(mid_level)
    if min_subgroup is not None and min_subgroup > children:
        warnings.append(_too_many(obj, field, min_subgroup, children, f"subgroup {_q(name)}: "))


def _too_many(obj: str, field: str, min_subgroup: int, children: int, prefix: str) -> str:
    kai = f"{prefix}minSubGroup ({min_subgroup}) exceeds the number of direct child SubGroups ({children})"
    return f"{kai} ({obj}: field {field}.minSubGroup: the gang can never start)"


def _q(name: object) -> str:
    """Go's ``%q`` of a name."""
    return json.dumps(str(name))
