"""Where the dashboard's looks come from, and what goes with each look besides the view: the last scheduling cycles
and each queue's history.

- A file (``FileFeed``: a scenario, manifests or a snapshot, as ``kai queues -f`` reads it): looked at again only
  when a file changes; its cycles and history are those of its own run.
- A live cluster (``LiveFeed``): one dry cycle of the real scheduler over what the watched caches hold at each look,
  nothing written; the running scheduler's last cycles from its plugin server (``/get-cycles``); history from a
  Prometheus kai's install knows of, else the scheduler's usage store, else this dashboard's own looks.
"""

import os
import time
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any, Protocol

from kai.cluster.kube import ApiError, KubeCluster
from kai.cluster.prometheus import PrometheusApi, UsageQueryError
from kai.components.dashboard import history
from kai.components.insight.inspect import Inspection, Moment, inspect
from kai.components.insight.live import SchedulerSide, read
from kai.components.insight.pending import Prove
from kai.components.scheduler.plugin_client import Unreachable, fetch_json
from kai.components.scheduler.usage import history_configmap
from kai.components.scheduler.usage_history import HistoryError
from kai.core.framework.usage.usage_config import CLIENT_BUILTIN

FixSearchOf = Callable[[Inspection], Prove | None]


class Feed(Protocol):
    label: str
    """What is looked at, for the page's title."""
    config_source: str
    """Where the scheduler config of the looks comes from."""
    fixes: "FixSearchOf"
    """The fix search for a look's waiting podgroups (``kai queues``' search: one budget a look, first in line
    first); None from it: no search."""

    def look(self) -> Inspection: ...

    def changed(self) -> bool:
        """Whether a new look may show something else than the last."""
        ...

    def cycles(self, ins: Inspection) -> dict[str, Any]:
        """The last scheduling cycles: ``source``, ``cycles`` (each with its counts of decisions) or ``unavailable``."""
        ...

    def history(self, ins: Inspection, queues: Iterable[Mapping[str, Any]]) -> history.History:
        """Each queue's GPUs over time; ``queues``: the look's queue rows (of the view document)."""
        ...


class FileFeed:
    def __init__(
        self,
        label: str,
        paths: Iterable[Path],
        look: Callable[[], Inspection],
        config_source: str,
        fixes: FixSearchOf = lambda ins: None,
    ) -> None:
        self.label = label
        self.config_source = config_source
        self.fixes = fixes
        self.paths = tuple(paths)
        self._look = look
        self._seen: tuple[float, ...] | None = None

    def look(self) -> Inspection:
        self._seen = self._stamps()
        return self._look()

    def changed(self) -> bool:
        return self._stamps() != self._seen

    def _stamps(self) -> tuple[float, ...]:
        return tuple(os.stat(path).st_mtime if path.exists() else -1.0 for path in self.paths)

    def cycles(self, ins: Inspection) -> dict[str, Any]:
        """Every cycle of the file's run, from its timeline (a run over time keeps only its last session)."""
        cycles = [
            {
                "cycle": sample.cycle,
                "at": sample.time,
                "binds": sample.binds,
                "pipelined": sample.pipelined,
                "evictions": sample.evictions,
                "unschedulable": sample.unschedulable,
            }
            for sample in ins.run.timeline
        ]
        return {"source": f"the run of {ins.scenario.name}", "cycles": cycles}

    def history(self, ins: Inspection, queues: Iterable[Mapping[str, Any]]) -> history.History:
        return history.from_timeline(ins.run.timeline, f"the simulated run of {ins.scenario.name}, cycle by cycle")


class LiveFeed:
    def __init__(
        self,
        cluster: KubeCluster,
        side: SchedulerSide,
        label: str,
        prometheus: PrometheusApi | None,
        window_s: float,
        fixes: FixSearchOf = lambda ins: None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.cluster = cluster
        self.fixes = fixes
        self.side = side
        self.label = label
        self.config_source = side.source
        self.prometheus = prometheus
        self.window_s = window_s
        self.clock = clock
        self.seen = history.Seen()

    def look(self) -> Inspection:
        return inspect(read(self.cluster, self.side, self.label), Moment.GIVEN)

    def changed(self) -> bool:
        return True

    def cycles(self, ins: Inspection) -> dict[str, Any]:
        source = f"the scheduler at {self.side.address}"
        try:
            answer = fetch_json(self.side.address, "/get-cycles")
        except Unreachable as error:
            return {"source": source, "unavailable": str(error), "cycles": []}
        return {"source": source, "cycles": answer.get("cycles", []) if isinstance(answer, dict) else []}

    def history(self, ins: Inspection, queues: Iterable[Mapping[str, Any]]) -> history.History:
        self.seen.add(ins.now, queues)
        notes = []
        if self.prometheus is not None:
            try:
                return history.from_prometheus(self.prometheus, self.clock(), self.window_s)
            except (UsageQueryError, ApiError) as error:
                notes.append(f"{self.prometheus.where} did not answer ({error})")
        usage_db = self.side.config.usage_db
        if usage_db is not None and usage_db.client_type == CLIENT_BUILTIN:
            key = history_configmap(usage_db, self.side.config.scheduler_name)
            try:
                stored = self.cluster.get("ConfigMap", key)
                if stored is not None:
                    return history.from_usage_store(stored, f"the scheduler's usage store (ConfigMap {key})")
                notes.append(f"the scheduler has not written its usage store (ConfigMap {key}) yet")
            except (ApiError, HistoryError) as error:
                notes.append(f"the scheduler's usage store (ConfigMap {key}) cannot be read ({error})")
        else:
            notes.append("no Prometheus is known and the scheduler keeps no usage store (usageDBConfig)")
        found = self.seen.history("this dashboard's looks since it started")
        found.note = "; ".join(notes)
        return found
