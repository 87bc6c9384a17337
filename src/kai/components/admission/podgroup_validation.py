"""The PodGroup validating webhook (``/validate-scheduling-run-ai-v2alpha2-podgroup``; KAI's podgroup-controller
serves it from ``pkg/apis/scheduling/v2alpha2/podgroup_webhook.go``).

Refused: what kai's scheduler cannot use (the core's parser: duplicate sub-group names, a parent that is not a
sub-group, a sub-group cycle, fields of the wrong type), ``minMember`` together with ``minSubGroup`` (on the
PodGroup or on a sub-group), a negative ``minSubGroup`` (0 is no gang requirement: KAI #1989), ``minSubGroup`` on a
leaf sub-group, a leaf without
``minMember``, and ``minMember`` on a sub-group that has children (a warning on update, as KAI, so PodGroups made
before the rule can still change). Warned: a ``minSubGroup`` larger than the number of direct children.
"""

from collections.abc import Mapping, Sequence
from typing import Any

from kai.components.admission.review import Decision, Request, allow, as_stored, deny
from kai.core.model.errors import InvalidObject
from kai.core.model.meta import object_ref
from kai.core.model.objects import parse_podgroup


def validate_podgroup(request: Request) -> Decision:
    raw = as_stored(request)
    obj = object_ref("PodGroup", raw)
    try:
        podgroup = parse_podgroup(raw)
    except InvalidObject as problem:
        return deny(problem)
    spec: Mapping[str, Any] = raw.get("spec") or {}
    entries: Sequence[Mapping[str, Any]] = spec.get("subGroups") or []
    children: dict[str, int] = {}
    for sub in podgroup.subgroups:
        if sub.parent:
            children[sub.parent.lower()] = children.get(sub.parent.lower(), 0) + 1
    errors: list[InvalidObject] = []
    warnings: list[str] = []
    roots = sum(1 for sub in podgroup.subgroups if not sub.parent)
    _check_min_fields(spec, "spec", roots, obj, errors, warnings, leaf=not podgroup.subgroups, top=True)
    for i, (sub, entry) in enumerate(zip(podgroup.subgroups, entries, strict=True)):
        count = children.get(sub.name.lower(), 0)
        mid_level = InvalidObject(
            obj,
            f"spec.subGroups[{i}].minMember",
            f"sub-group {sub.name!r} has child sub-groups, so its gang is counted in sub-groups; allowed: "
            "minSubGroup here, minMember on its leaves",
        )
        if count and sub.min_member is not None:
            if request.operation == "UPDATE":
                warnings.append(str(mid_level))
            else:
                errors.append(mid_level)
        _check_min_fields(entry, f"spec.subGroups[{i}]", count, obj, errors, warnings, leaf=not count, top=False)
    if errors:
        return deny("; ".join(str(e) for e in errors), *warnings)
    return allow(*warnings)


def _check_min_fields(
    entry: Mapping[str, Any],
    field: str,
    children: int,
    obj: str,
    errors: list[InvalidObject],
    warnings: list[str],
    *,
    leaf: bool,
    top: bool,
) -> None:
    min_member, min_subgroup = entry.get("minMember"), entry.get("minSubGroup")
    if min_member is not None and min_subgroup is not None:
        errors.append(
            InvalidObject(
                obj,
                f"{field}.minSubGroup",
                "set together with minMember; allowed: minMember (a number of pods) or minSubGroup (a number of "
                "child sub-groups), not both",
            )
        )
        return
    if min_subgroup is not None and leaf and not top:
        errors.append(
            InvalidObject(
                obj,
                f"{field}.minSubGroup",
                "is set on a leaf sub-group (it has no child sub-groups); allowed: minMember",
            )
        )
    elif min_subgroup is not None and min_subgroup < 0:
        errors.append(InvalidObject(obj, f"{field}.minSubGroup", f"got {min_subgroup}; allowed: 0 or more"))
    elif min_subgroup is not None and min_subgroup > children:
        warnings.append(
            f"{obj}: field {field}.minSubGroup: {min_subgroup} is more than the {children} direct child "
            "sub-groups; the gang can never start"
        )
    if leaf and not top and min_member is None:
        errors.append(InvalidObject(obj, f"{field}.minMember", "is required on a leaf sub-group (its gang size)"))
