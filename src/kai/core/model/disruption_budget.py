"""PodDisruptionBudgets (policy/v1) as the scheduler reads them: which pods one covers and how many more of them
may be disrupted now.

The API server's eviction subresource refuses an eviction its PDB does not allow, and it judges by the PDB's status
(``disruptionsAllowed``, which kube-controller-manager's disruption controller keeps, less the pods it has let go
since: ``disruptedPods``). The scheduler reads the same status, so the victims it chooses are the ones the API
server will let go. ``spec`` is kept for the simulator's stand-in of that controller and for messages. The scheduler
counts every running victim against its PDB, also one not ready, which the API server may let go regardless
(``unhealthyPodEvictionPolicy``): it errs on the PDB's side.
"""

from collections.abc import Mapping
from dataclasses import dataclass

from kai.core.model.errors import InvalidObject
from kai.core.model.meta import Metadata, Raw, integer, mapping, object_ref
from kai.core.model.selectors import LabelSelector

IntOrPercent = int | str


@dataclass(frozen=True, slots=True)
class DisruptionBudget:
    meta: Metadata
    selector: LabelSelector
    min_available: IntOrPercent | None
    max_unavailable: IntOrPercent | None
    disruptions_allowed: int
    """What the status allows now; 0 while the controller has not observed the PDB's latest spec (the API server
    refuses every eviction then)."""
    disrupted_pods: frozenset[str]
    """Pod names the API server let go that the controller has not seen go yet: already counted."""
    current_healthy: int = 0
    desired_healthy: int = 0
    """What the status says: the API server's refusal quotes them."""

    @property
    def key(self) -> str:
        return self.meta.key

    def covers(self, namespace: str, labels: Mapping[str, str]) -> bool:
        return namespace == self.meta.namespace and self.selector.matches(labels)

    def spec_text(self) -> str:
        """``minAvailable: 3`` / ``maxUnavailable: 1`` for messages."""
        if self.min_available is not None:
            return f"minAvailable: {self.min_available}"
        return f"maxUnavailable: {self.max_unavailable}" if self.max_unavailable is not None else "no spec"


def _int_or_percent(spec: Raw, key: str, obj: str) -> IntOrPercent | None:
    value = spec.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | str):
        raise InvalidObject(obj, f"spec.{key}", f"got {value!r}; allowed: a whole number or a percentage, e.g. 50%")
    if isinstance(value, str):
        digits = value.removesuffix("%")
        if not value.endswith("%") or not digits.isdecimal():
            raise InvalidObject(obj, f"spec.{key}", f"got {value!r}; allowed: a whole number or a percentage, e.g. 50%")
    elif value < 0:
        raise InvalidObject(obj, f"spec.{key}", f"got {value}; must not be negative")
    return value


def parse_disruption_budget(raw: Raw) -> DisruptionBudget:
    meta = Metadata(raw, "PodDisruptionBudget", namespaced=True)
    obj = object_ref("PodDisruptionBudget", raw)
    spec = mapping(raw, "spec", obj, "spec")
    status = mapping(raw, "status", obj, "status")
    min_available = _int_or_percent(spec, "minAvailable", obj)
    max_unavailable = _int_or_percent(spec, "maxUnavailable", obj)
    if min_available is not None and max_unavailable is not None:
        raise InvalidObject(obj, "spec", "minAvailable and maxUnavailable are exclusive; set one")
    generation = integer(mapping(raw, "metadata", obj, "metadata"), "generation", obj, "metadata.generation", 0) or 0
    observed = (integer(status, "observedGeneration", obj, "status.observedGeneration", 0) or 0) >= generation
    allowed = integer(status, "disruptionsAllowed", obj, "status.disruptionsAllowed", 0) or 0
    disrupted = mapping(status, "disruptedPods", obj, "status.disruptedPods")
    return DisruptionBudget(
        meta=meta,
        selector=LabelSelector.parse(spec.get("selector"), obj, "spec.selector"),
        min_available=min_available,
        max_unavailable=max_unavailable,
        disruptions_allowed=max(0, allowed) if observed else 0,
        disrupted_pods=frozenset(str(name) for name in disrupted),
        current_healthy=integer(status, "currentHealthy", obj, "status.currentHealthy", 0) or 0,
        desired_healthy=integer(status, "desiredHealthy", obj, "status.desiredHealthy", 0) or 0,
    )
