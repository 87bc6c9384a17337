"""Making the changes of a what-if run to a scenario: a new scenario, the base one untouched.

Queues get their new quota, limit, weight or priority in their spec; an added node is a copy of an existing one
under a new name; a removed node's pods go back to pending, as when a node is drained and its pods' controllers
create them again; scheduler changes replace the config's actions, tiers or nodeplacement arguments; submitted
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
    objects = [copy.deepcopy(obj) for obj in scenario.objects]
    _queues(objects, changes)
    _nodes(objects, changes)
    objects += _submitted(objects, changes, scenario.now)
    config = _config(scenario.config, changes)
    return dataclasses.replace(scenario, name=f"{scenario.name} (changed)", objects=objects, config=config)


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
        spec.pop("nodeName", None)
        obj["status"] = {"phase": "Pending"}
        (obj["metadata"].get("labels") or {}).pop(names.GPU_GROUP_LABEL, None)
        (obj["metadata"].get("annotations") or {}).pop(names.RECEIVED_RESOURCE_TYPE_ANNOTATION, None)


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
