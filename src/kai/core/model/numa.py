"""NUMA objects the scheduler reads: a node's NodeResourceTopology (topology.node.k8s.io/v1alpha2) and a pod's
NUMA placement record (KAI's ``kai.scheduler/numa-placement-*`` annotations, a BindRequest's
``spec.predictedNUMAZones``).

A NodeResourceTopology is published per node (same name) by an exporter (NFD's topology updater, the Resource
Topology Exporter): the kubelet Topology Manager's policy and scope (attributes, or the older ``topologyPolicies``),
and per NUMA zone what each resource has allocatable and available. Only zones of type ``Node`` are kept (the
kubelet aligns at NUMA-node granularity), ordered by the number at the end of their name, as the kubelet prefers the
lowest NUMA node among equals. Amounts are in the scheduler's units (millicores, bytes, counts).
"""

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass

from kai.core.model.errors import InvalidObject
from kai.core.model.meta import Metadata, Raw, mapping, object_ref, sequence, string
from kai.core.model.quantity import resource_amount

POLICIES = ("none", "best-effort", "restricted", "single-numa-node")
SCOPES = ("container", "pod")
_LEGACY = {
    "SingleNUMANodePodLevel": ("single-numa-node", "pod"),
    "SingleNUMANodeContainerLevel": ("single-numa-node", "container"),
    "RestrictedPodLevel": ("restricted", "pod"),
    "Restricted": ("restricted", "container"),
    "RestrictedContainerLevel": ("restricted", "container"),
    "BestEffortPodLevel": ("best-effort", "pod"),
    "BestEffort": ("best-effort", "container"),
    "BestEffortContainerLevel": ("best-effort", "container"),
}
"""The deprecated ``topologyPolicies`` values (policy and scope in one), for exporters that still write them."""
_TRAILING_NUMBER = re.compile(r"(\d+)$")


@dataclass(frozen=True, slots=True)
class NumaZone:
    name: str
    allocatable: Mapping[str, float]
    available: Mapping[str, float]


@dataclass(frozen=True, slots=True)
class NodeTopology:
    """One node's NUMA zones under its kubelet's Topology Manager ``policy`` (one of ``POLICIES``) and ``scope``."""

    node: str
    policy: str
    scope: str
    zones: tuple[NumaZone, ...]

    @property
    def key(self) -> str:
        return self.node


@dataclass(frozen=True, slots=True)
class ZonePlacement:
    """What a pod takes from one NUMA zone (by the zone's name: indexes change when a topology does)."""

    zone: str
    amounts: Mapping[str, float]


NumaPlacement = tuple[ZonePlacement, ...]


def _zone_order(zone: NumaZone) -> tuple[int, int, str]:
    number = _TRAILING_NUMBER.search(zone.name)
    return (0, int(number.group(1)), zone.name) if number else (1, 0, zone.name)


def _policy_and_scope(raw: Raw, obj: str) -> tuple[str, str]:
    attributes = {
        string(attr, "name", obj, f"attributes[{i}].name"): string(attr, "value", obj, f"attributes[{i}].value")
        for i, attr in enumerate(sequence(raw, "attributes", obj, "attributes"))
    }
    policy = attributes.get("topologyManagerPolicy", "")
    if policy:
        scope = attributes.get("topologyManagerScope", "container")
        return (policy if policy in POLICIES else "none"), (scope if scope in SCOPES else "container")
    legacy = sequence(raw, "topologyPolicies", obj, "topologyPolicies")
    return _LEGACY.get(str(legacy[0]), ("none", "container")) if legacy else ("none", "container")


def parse_node_topology(raw: Raw) -> NodeTopology:
    meta = Metadata(raw, "NodeResourceTopology", namespaced=False)
    obj = object_ref("NodeResourceTopology", raw)
    policy, scope = _policy_and_scope(raw, obj)
    zones = []
    for i, zone in enumerate(sequence(raw, "zones", obj, "zones")):
        if string(zone, "type", obj, f"zones[{i}].type") != "Node":
            continue
        allocatable: dict[str, float] = {}
        available: dict[str, float] = {}
        for j, info in enumerate(sequence(zone, "resources", obj, f"zones[{i}].resources")):
            field = f"zones[{i}].resources[{j}]"
            name = string(info, "name", obj, f"{field}.name")
            allocatable[name] = resource_amount(name, info.get("allocatable", 0), obj, f"{field}.allocatable")
            available[name] = resource_amount(name, info.get("available", 0), obj, f"{field}.available")
        zones.append(NumaZone(string(zone, "name", obj, f"zones[{i}].name"), allocatable, available))
    return NodeTopology(meta.name, policy, scope, tuple(sorted(zones, key=_zone_order)))


def parse_placement(records: object, obj: str, field: str) -> NumaPlacement:
    """A placement record: ``[{"zone": "node-0", "amount": {"cpu": "3"}}, ...]`` (a list, or its JSON text)."""
    if isinstance(records, str):
        try:
            records = json.loads(records)
        except json.JSONDecodeError as error:
            raise InvalidObject(obj, field, f"is not JSON ({error.msg}); expected a list of {{zone, amount}}") from None
    if not isinstance(records, list) or not records:
        raise InvalidObject(obj, field, f"got {records!r}; expected a non-empty list of {{zone, amount}}")
    placement = []
    for i, record in enumerate(records):
        if not isinstance(record, Mapping):
            raise InvalidObject(obj, f"{field}[{i}]", f"got {record!r}; expected {{zone, amount}}")
        amount = mapping(record, "amount", obj, f"{field}[{i}].amount")
        amounts = {str(k): resource_amount(str(k), v, obj, f"{field}[{i}].amount.{k}") for k, v in amount.items()}
        placement.append(ZonePlacement(string(record, "zone", obj, f"{field}[{i}].zone"), amounts))
    return tuple(placement)
