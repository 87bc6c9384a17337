"""A KAI snapshot zip (``kai snapshot``, or KAI's own ``/get-snapshot``) as a scenario for ``kai simulate``.

The snapshot's objects load into the embedded cluster as a scenario's would, its config is the scheduler config
of the run, and what kai cannot honour (settings, object kinds it does not schedule with) is listed in the
problems. The scenario's clock is when the snapshot was taken: kai records it; for a KAI snapshot, which does not,
it is the newest time any object mentions (said in the problems), so that runtimes and delays count from about then.
"""

import dataclasses
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kai.components.scheduler.node_pool import NodePool
from kai.components.scheduler.snapshot_format import SnapshotFormatError, podgroup_of_pod, read_zip
from kai.components.sim.envelope import usable_objects
from kai.components.sim.problems import WARNING, Problem
from kai.core.config import parse_config
from kai.core.framework.config import SchedulerConfig
from kai.core.model import names
from kai.core.model.errors import InvalidObject
from kai.core.model.meta import format_time, parse_time
from kai.core.state.cluster_state import object_key

ZIP_MAGIC = b"PK\x03\x04"


def is_snapshot(path: Path) -> bool:
    """A zip file (by its first bytes, whatever its name)."""
    try:
        with path.open("rb") as file:
            return file.read(4) == ZIP_MAGIC
    except OSError:
        return False


@dataclass
class LoadedSnapshot:
    config: SchedulerConfig
    now: float
    objects: list[dict[str, Any]]
    problems: list[Problem]
    node_pool: NodePool | None
    """The shard it was taken in (None: the whole cluster)."""
    podgroups_elsewhere: frozenset[str] = frozenset()
    """Of a shard: the other pools' PodGroups its pods name (their pods only take room on their nodes)."""


def load_snapshot(path: Path) -> LoadedSnapshot:
    """The snapshot's parts for a scenario; ``SnapshotFormatError`` (one line naming the file) if unusable."""
    where = str(path)
    try:
        snapshot = read_zip(path.read_bytes(), where)
    except OSError as error:
        raise SnapshotFormatError(f"{where}: cannot be read: {error.strerror or error}") from error
    entries = [(f"rawObjects[{i}] ({obj.get('kind')})", obj) for i, obj in enumerate(snapshot.objects)]
    objects, problems = usable_objects(entries)
    try:
        config = parse_config(snapshot.config)
    except InvalidObject as error:
        raise SnapshotFormatError(f"{where}: {error}") from error
    notes = list(snapshot.notes)
    pool, elsewhere = snapshot.node_pool, frozenset[str]()
    if pool is not None:
        config = dataclasses.replace(config, node_pool=pool.name)
        recorded = snapshot.podgroups_elsewhere  # None in KAI's: it lists every pod but only its pool's PodGroups
        elsewhere = podgroups_elsewhere(objects) if recorded is None else recorded
        notes += _pool_notes(objects, pool, elsewhere)
    notes += [
        (f"rawObjects.{n}", f"{c} objects kai does not schedule with; not used") for n, c in snapshot.ignored.items()
    ]
    now = snapshot.captured_at
    if now is None:
        now = newest_time(objects)
        notes.append(
            (
                "kai.capturedAt",
                f"not set (KAI does not record it); kai runs it at {format_time(now)}, the newest time in it",
            )
        )
    label = f"snapshot {path.name}"
    problems += [Problem.of(WARNING, "Snapshot", path.name, InvalidObject(label, f, p)) for f, p in notes]
    return LoadedSnapshot(config, now, objects, problems, pool, elsewhere)


def podgroups_elsewhere(objects: list[dict[str, Any]]) -> frozenset[str]:
    """The PodGroups a shard's snapshot names in its pods' annotations but does not hold: KAI's shard lists every pod
    and only its own pool's PodGroups, so those are other pools' (their pods only take room on their nodes)."""
    held = {object_key(obj) for obj in objects if obj["kind"] == "PodGroup"}
    named = {podgroup_of_pod(obj) for obj in objects if obj["kind"] == "Pod"}
    return frozenset(key for key in named if key and key not in held)


def _pool_notes(objects: list[dict[str, Any]], pool: NodePool, elsewhere: frozenset[str]) -> list[tuple[str, str]]:
    """What of the snapshot its pool's run leaves out: pods of other pools' PodGroups, and the nodes, queues and
    PodGroups of other pools a hand-edited snapshot adds (KAI's own hold none: its partition selector)."""
    said = f"{pool.label_key}={pool.value}" if pool.value else f"no {pool.label_key} label"
    where = ("schedulerParams.partitionParams", f"node pool {pool.name} ({said})")
    others = Counter(obj["kind"] for obj in objects if obj["kind"] != "Pod" and not pool.holds(obj["kind"], obj))
    notes = []
    if others:
        counted = ", ".join(f"{count} {kind}{'s' if count > 1 else ''}" for kind, count in sorted(others.items()))
        notes.append((where[0], f"{where[1]}: {counted} of other pools left out"))
    if pods := sum(podgroup_of_pod(obj) in elsewhere for obj in objects if obj["kind"] == "Pod"):
        told = f"the pods of other pools' PodGroups ({pods}) only take room on their nodes"
        notes.append((where[0], f"{where[1]}: {told}"))
    return notes


def newest_time(objects: list[dict[str, Any]]) -> float:
    """The latest creation, start, transition or last-start time any object mentions (0 when none does)."""
    newest = 0.0
    for obj in objects:
        meta, status = obj.get("metadata") or {}, obj.get("status") or {}
        stamps = [meta.get("creationTimestamp"), (meta.get("annotations") or {}).get(names.LAST_START_ANNOTATION)]
        stamps.append(status.get("startTime") if isinstance(status, dict) else None)
        for key in ("conditions", "schedulingConditions"):
            for condition in status.get(key) or [] if isinstance(status, dict) else []:
                if isinstance(condition, dict):
                    stamps.append(condition.get("lastTransitionTime"))
        for stamp in stamps:
            if stamp:
                try:
                    newest = max(newest, parse_time(stamp, "", ""))
                except InvalidObject:
                    continue
    return newest
