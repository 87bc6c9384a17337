"""Writing a pass's status patches: each one on its own (a failure never stops the others, docs/architecture.md §8), and
the ones that failed named, so the controller tries them again next pass. They are reports (``port.reporting``): no
decision waits for a status the controllers write."""

from kai.cluster.port import ClusterClient, Raw, reporting
from kai.components.shared.parallel import Writes


def patch_statuses(cluster: ClusterClient, writes: Writes, kind: str, patches: list[tuple[str, Raw]]) -> set[str]:
    """Patches each object's status; the keys of those not written."""
    written: set[str] = set()

    def write(item: tuple[str, Raw]) -> None:
        with reporting():
            cluster.patch_status(kind, *item)
        written.add(item[0])

    writes.each(f"{kind.lower()} status", patches, write)
    return {key for key, _ in patches if key not in written}
