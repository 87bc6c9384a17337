"""Making the changes of a what-if run to a scenario: a new scenario, the base one untouched.

Queues get their new quota, limit, weight or priority in their spec; an added node is a copy of an existing one
under a new name; a removed node's pods go back to pending, as when a node is drained and its pods' controllers
create them again, and so does an evicted pod (moved: its controller re-creates it and the scheduler places it
again); scheduler changes replace the config's actions, tiers or nodeplacement arguments; submitted
objects are created at the start, as a scenario's objects are.
"""

import copy
import dataclasses
from typing import Any

from kai.components.sim.envelope import usable_objects
from kai.components.sim.problems import ERROR
from kai.components.sim.scenario import Scenario
from kai.components.sim.whatif.changes import ChangeError, Changes
from kai.core.config import parse_config
from kai.core.framework.config import PluginOption, SchedulerConfig
from kai.core.model import names
from kai.core.model.meta import format_time

HOSTNAME_LABEL = "kubernetes.io/hostname"
NODE_PLACEMENT = "nodeplacement"


def apply_changes(scenario: Scenario, changes: Changes) -> Scenario:
    """The changed scenario; the objects a change edits are copies (the others are shared: a run never writes its
    input, so a proof of ``kai explain`` does not copy a large input for a small change)."""
    objects = [copy.deepcopy(obj) if _edited(obj, changes) else obj for obj in scenario.objects]
    _queues(objects, changes)
    _nodes(objects, changes)
    _evict(objects, changes.evict_pods)
    objects += _submitted(objects, changes, scenario.now)
    config = _config(scenario.config, changes)
    return dataclasses.replace(scenario, name=f"{scenario.name} (changed)", objects=objects, config=config)


def _edited(obj: dict[str, Any], changes: Changes) -> bool:
    """Whether a change may edit ``obj`` in place: a Queue, or a pod on a removed node or evicted."""
    if obj["kind"] == "Queue":
        return bool(changes.queues)
    if obj["kind"] != "Pod":
        return False
    node = (obj.get("spec") or {}).get("nodeName")
    return (node is not None and node in changes.remove_nodes) or _key(obj) in changes.evict_pods


def _named(objects: list[dict[str, Any]], kind: str) -> dict[str, dict[str, Any]]:
    return {obj["metadata"]["name"]: obj for obj in objects if obj["kind"] == kind}


def _queues(objects: list[dict[str, Any]], changes: Changes) -> None:
    queues = _named(objects, "Queue")
    for change in changes.queues:
        queue = queues.get(change.queue)
        if queue is None:
            known = ", ".join(sorted(queues)) or "none"
            raise ChangeError(f"queue {change.queue}: no such Queue in the input; its queues: {known}")
        spec = queue.setdefault("spec", {})
        if change.field == ("priority",):
            spec["priority"] = int(change.value)
            continue
        resource, item = change.field
        resources = spec.setdefault("resources", {})
        entry = resources.setdefault(resource, {"quota": 0, "limit": -1, "overQuotaWeight": 1})
        entry[item] = int(change.value) if change.value.is_integer() else change.value


def _nodes(objects: list[dict[str, Any]], changes: Changes) -> None:
    nodes = _named(objects, "Node")
    for addition in changes.add_nodes:
        model = nodes.get(addition.like)
        if model is None:
            raise ChangeError(f"--add-nodes like={addition.like}: no such Node in the input; {_some(nodes)}")
        added = 0
        number = 0
        while added < addition.count:
            number += 1
            name = f"{addition.like}-whatif-{number}"
            if name in nodes:
                continue
            node = copy.deepcopy(model)
            meta = node["metadata"]
            meta["name"] = name
            meta.pop("uid", None)
            meta.pop("resourceVersion", None)
            if HOSTNAME_LABEL in (meta.get("labels") or {}):
                meta["labels"][HOSTNAME_LABEL] = name
            nodes[name] = node
            objects.append(node)
            added += 1
    for name in changes.remove_nodes:
        if name not in nodes:
            raise ChangeError(f"--remove-node {name}: no such Node in the input; {_some(nodes)}")
        objects.remove(nodes.pop(name))
        _drain(objects, name)


def _drain(objects: list[dict[str, Any]], node: str) -> None:
    """The removed node's pods pending again (reservation pods and BindRequests for it gone)."""
    for obj in list(objects):
        kind, spec = obj["kind"], obj.get("spec") or {}
        if kind == "BindRequest" and spec.get("selectedNode") == node:
            objects.remove(obj)
        if kind != "Pod" or spec.get("nodeName") != node:
            continue
        if obj["metadata"].get("namespace") == names.RESERVATION_NAMESPACE:
            objects.remove(obj)
            continue
        _to_pending(obj)


def _evict(objects: list[dict[str, Any]], keys: list[str]) -> None:
    """Each named pod pending again, with its BindRequest gone, and the reservation pod of a shared GPU no other
    pod on that node uses (the binder's clean-up)."""
    pods = {
        f"{obj['metadata'].get('namespace')}/{obj['metadata']['name']}": obj for obj in objects if obj["kind"] == "Pod"
    }
    for key in keys:
        pod = pods.get(key)
        node = ((pod or {}).get("spec") or {}).get("nodeName")
        if pod is None or not node:
            what = "no such Pod in the input" if pod is None else "it runs on no node in the input"
            raise ChangeError(f"--evict-pod {key}: {what}; only a pod on a node can be evicted")
        group = (pod["metadata"].get("labels") or {}).get(names.GPU_GROUP_LABEL)
        for obj in list(objects):
            if obj["kind"] == "BindRequest" and _bind_request_of(obj, pod):
                objects.remove(obj)
        _to_pending(pod)
        if group and not any(_uses(obj, node, group) for obj in objects if obj["kind"] == "Pod"):
            objects[:] = [obj for obj in objects if not _reserves(obj, node, group)]


def _uses(pod: dict[str, Any], node: str, group: str) -> bool:
    return _in_group(pod, node, group) and pod["metadata"].get("namespace") != names.RESERVATION_NAMESPACE


def _reserves(obj: dict[str, Any], node: str, group: str) -> bool:
    return _in_group(obj, node, group) and obj["metadata"].get("namespace") == names.RESERVATION_NAMESPACE


def _in_group(obj: dict[str, Any], node: str, group: str) -> bool:
    """A pod on ``node`` in GPU group ``group`` (a reservation pod too)."""
    labels = obj["metadata"].get("labels") or {}
    return (
        obj["kind"] == "Pod"
        and (obj.get("spec") or {}).get("nodeName") == node
        and labels.get(names.GPU_GROUP_LABEL) == group
    )


def _key(obj: dict[str, Any]) -> str:
    return f"{obj['metadata'].get('namespace')}/{obj['metadata']['name']}"


def _bind_request_of(request: dict[str, Any], pod: dict[str, Any]) -> bool:
    same_namespace = request["metadata"].get("namespace") == pod["metadata"].get("namespace")
    return same_namespace and bool((request.get("spec") or {}).get("podName") == pod["metadata"]["name"])


def _to_pending(pod: dict[str, Any]) -> None:
    """A pod as its controller makes it again: on no node, pending, without its GPU group."""
    pod["spec"].pop("nodeName", None)
    pod["status"] = {"phase": "Pending"}
    (pod["metadata"].get("labels") or {}).pop(names.GPU_GROUP_LABEL, None)
    (pod["metadata"].get("annotations") or {}).pop(names.RECEIVED_RESOURCE_TYPE_ANNOTATION, None)


def _some(nodes: dict[str, Any]) -> str:
    shown = sorted(nodes)[:5]
    more = f" and {len(nodes) - len(shown)} more" if len(nodes) > len(shown) else ""
    return f"its nodes: {', '.join(shown) or 'none'}{more}"


def _submitted(objects: list[dict[str, Any]], changes: Changes, now: float) -> list[dict[str, Any]]:
    entries = [(f"submit[{i}]", copy.deepcopy(entry)) for i, entry in enumerate(changes.submit)]
    submitted, problems = usable_objects(entries)
    taken = {(o["kind"], o["metadata"].get("namespace"), o["metadata"]["name"]) for o in objects}
    for problem in problems:
        if problem.severity == ERROR:
            raise ChangeError(f"submit: {problem.kind} {problem.name}: field {problem.field}: {problem.problem}")
    for obj in submitted:
        meta = obj["metadata"]
        if (obj["kind"], meta.get("namespace"), meta["name"]) in taken:
            raise ChangeError(f"submit: {obj['kind']} {meta['name']}: field metadata.name: already in the input")
        meta.setdefault("creationTimestamp", format_time(now))
    return submitted


def _config(config: SchedulerConfig, changes: Changes) -> SchedulerConfig:
    raw = {"actions": changes.actions, "tiers": changes.tiers}
    given = parse_config({key: value for key, value in raw.items() if value is not None})
    actions = given.actions if changes.actions is not None else config.actions
    tiers = given.tiers if changes.tiers is not None else config.tiers
    if changes.placement:
        tiers = _placed(tiers, changes.placement)
    return dataclasses.replace(config, actions=actions, tiers=tiers)


def _placed(
    tiers: tuple[tuple[PluginOption, ...], ...], placement: dict[str, str]
) -> tuple[tuple[PluginOption, ...], ...]:
    """The tiers with nodeplacement's arguments set (the plugin added to the first tier if it is not there)."""
    found = any(option.name == NODE_PLACEMENT for tier in tiers for option in tier)
    if not found:
        first = (*tiers[0], PluginOption(NODE_PLACEMENT, dict(placement))) if tiers else ()
        return (first, *tiers[1:])
    return tuple(
        tuple(PluginOption(o.name, {**o.arguments, **placement}) if o.name == NODE_PLACEMENT else o for o in tier)
        for tier in tiers
    )
