"""The nodes of a view with their GPUs in use, whole and shared, as the scheduler counts them (``NodeTable``): per
node its GPUs, the GPUs held whole (MIG slices counted as GPUs), the part of each shared GPU its pods hold, its pods
(GPU-sharing reservation pods left out) and whether it takes pods. Columns of plain lists, so a thousand nodes cost
a few kilobytes on the page."""

from typing import Any

from kai.core.framework.session import Session


def node_columns(session: Session) -> dict[str, Any]:
    table = session.cluster.nodes
    gpus, held = table.gpu_use()
    shared: list[list[float]] = []
    whole: list[float] = []
    for info, total_held in zip(table.infos, held.tolist(), strict=True):
        memory = info.gpu_memory_mib
        parts = [used / memory for used in info.shared.used.values() if used > 0] if memory > 0 else []
        shared.append([round(part, 3) for part in sorted(parts, reverse=True)])
        whole.append(round(total_held - sum(parts), 3))
    return {
        "names": [info.name for info in table.infos],
        "gpus": [round(value, 3) for value in gpus.tolist()],
        "whole": whole,
        "shared": shared,
        "pods": [sum(1 for t in info.tasks.values() if not t.pod.is_reservation) for info in table.infos],
        "ready": table.ready.tolist(),
    }
