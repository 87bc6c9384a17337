"""Checking a scenario's ``expect`` block against what was observed; returns readable mismatches."""

from typing import Any

from kai.components.sim.outcome import Outcome
from kai.core.model.duration import parse_duration
from kai.core.model.errors import InvalidObject
from kai.core.model.quantity import format_amount, resource_amount

_TOLERANCE = 1e-6


def _same(expected: Any, actual: Any) -> bool:
    if isinstance(expected, int | float) and not isinstance(expected, bool):
        return isinstance(actual, int | float) and abs(float(expected) - float(actual)) <= _TOLERANCE
    return bool(expected == actual)


def _check_fields(
    what: str, expected: dict[str, Any], actual: dict[str, Any], now: float, mismatches: list[str]
) -> None:
    for field, want in expected.items():
        if field == "lastStartTimestamp":
            started = actual.get("lastStartTimestamp")
            if started is None:
                mismatches.append(f"{what}: lastStartTimestamp expected to be set, it is not")
            elif isinstance(want, dict) and "olderThan" in want:
                older = parse_duration(str(want["olderThan"]), what, "lastStartTimestamp.olderThan")
                if now - started < older:
                    mismatches.append(f"{what}: lastStartTimestamp expected older than {want['olderThan']}")
            continue
        if field == "numaZonesAvailable":
            _check_zones(what, want, actual.get(field), mismatches)
            continue
        if field not in actual:
            mismatches.append(f"{what}: unknown expectation field {field!r}")
            continue
        if not _same(want, actual[field]):
            mismatches.append(f"{what}: {field} expected {want!r}, got {actual[field]!r}")


def check(expect: dict[str, Any], outcome: Outcome, now: float, label: str) -> list[str]:
    mismatches: list[str] = []
    for key, want in (expect.get("podGroups") or {}).items():
        actual = outcome.podgroups.get(key)
        if actual is None:
            mismatches.append(f"{label}: podgroup {key} is not in the cluster")
            continue
        pods = {k: v for k, v in outcome.pods.items() if _belongs(k, key, outcome)}
        group_fields = {k: v for k, v in want.items() if k not in ("status", "node", "numaZones")}
        _check_fields(f"{label}: podgroup {key}", group_fields, actual, now, mismatches)
        for field in ("status", "node", "numaZones"):
            if field in want:
                for pod_key, pod in pods.items():
                    if pod[field] != want[field]:
                        got = pod[field]
                        mismatches.append(
                            f"{label}: podgroup {key}: pod {pod_key} {field} expected {want[field]!r}, got {got!r}"
                        )
    for kind, expected, found in (("pod", "pods", outcome.pods), ("node", "nodes", outcome.nodes)):
        for key, want in (expect.get(expected) or {}).items():
            actual = found.get(key)
            if actual is None:
                mismatches.append(f"{label}: {kind} {key} is not in the cluster")
                continue
            _check_fields(f"{label}: {kind} {key}", want, actual, now, mismatches)
    for counter, bound in (expect.get("maxCounts") or {}).items():
        if outcome.counts.get(counter, 0) > bound:
            mismatches.append(f"{label}: {counter} {outcome.counts.get(counter)} exceeds the bound {bound}")
    return mismatches


def _belongs(pod_key: str, podgroup_key: str, outcome: Outcome) -> bool:
    return outcome.pods[pod_key].get("podgroup") == podgroup_key


def _check_zones(what: str, expected: Any, actual: dict[str, dict[str, float]] | None, mismatches: list[str]) -> None:
    """``numaZonesAvailable``: per NUMA zone, resource quantities (``{zone-0: {cpu: "1"}}``) the zone has left."""
    if actual is None:
        mismatches.append(f"{what}: numaZonesAvailable expected, but the node has no NUMA zones (or no numa plugin)")
        return
    for zone, resources in (expected or {}).items():
        for name, quantity in (resources or {}).items():
            try:
                want = resource_amount(str(name), quantity, what, f"numaZonesAvailable.{zone}.{name}")
            except InvalidObject as error:
                mismatches.append(str(error))
                continue
            got = actual.get(str(zone), {}).get(str(name))
            if got is None or abs(got - want) > _TOLERANCE:
                shown = "nothing" if got is None else repr(format_amount(str(name), got))
                mismatches.append(f"{what}: NUMA zone {zone} {name} available expected {quantity!r}, got {shown}")
