"""PodGroup totals as the PodGroups' ``status.resourcesStatus`` holds them: what ``kai queue-controller`` sums when
it runs apart from the podgroup-controller (KAI's reads PodGroups only, not pods)."""

from collections.abc import Mapping
from typing import Any

from kai.cluster.port import ClusterClient
from kai.components.controllers.changes import Changes
from kai.components.controllers.podgroup_status import PodGroupTotals
from kai.components.controllers.problems import ProblemLog
from kai.components.controllers.totals import Amount, Frozen, exact, freeze
from kai.core.model.errors import InvalidObject
from kai.core.model.meta import mapping, object_ref
from kai.core.model.quantity import resource_amount


class StatusTotals:
    """A ``TotalsSource`` (``queue_status``) fed by the PodGroups' changes."""

    def __init__(self, cluster: ClusterClient) -> None:
        self.problems = ProblemLog()
        self._changes = Changes(cluster, ("PodGroup",))

    def take_totals(self) -> dict[str, PodGroupTotals | None]:
        return {
            key: None if raw is None else self._read(key, raw) for key, raw in self._changes.take()["PodGroup"].items()
        }

    def _read(self, key: str, raw: Mapping[str, Any]) -> PodGroupTotals | None:
        spec = raw.get("spec")
        queue = spec.get("queue", "") if isinstance(spec, Mapping) else ""
        obj = object_ref("PodGroup", raw)
        try:
            status = mapping(raw, "status", obj, "status")
            statuses = mapping(status, "resourcesStatus", obj, "status.resourcesStatus")
            requested, allocated, non_preemptible = (
                _read_list(statuses, field, obj) for field in ("requested", "allocated", "allocatedNonPreemptible")
            )
        except InvalidObject as error:
            self.problems.report(f"PodGroup {key}", error)
            return None
        self.problems.clear(f"PodGroup {key}")
        return PodGroupTotals(queue if isinstance(queue, str) else "", requested, allocated, non_preemptible)


def _read_list(statuses: Mapping[str, Any], field: str, obj: str) -> Frozen:
    amounts: dict[str, Amount] = {}
    for name, value in mapping(statuses, field, obj, f"status.resourcesStatus.{field}").items():
        where = f"status.resourcesStatus.{field}.{name}"
        amount = resource_amount(name, value, obj, where)
        try:
            amounts[name] = exact(amount)
        except ValueError:
            raise InvalidObject(obj, where, f"got {value!r}; allowed: a finite quantity") from None
    return freeze(amounts)
