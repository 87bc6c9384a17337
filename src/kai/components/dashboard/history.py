"""Each queue's GPUs over time, for the dashboard's charts, from the best source there is:

- a Prometheus that kai's install knows of (``known_prometheus``): allocated and quota as the queue controller
  exports them, fair share and time-based usage as the scheduler does (the metrics the Grafana queue dashboard
  charts), over the last ``window``;
- else the scheduler's own usage store (time-based fair share's ``builtin`` history in its ConfigMap): each queue's
  mean GPUs allocated per bucket of the store;
- else what this dashboard saw since it started (``Seen``: the view's numbers at each look);
- for a file, the run's timeline: allocated and fair share after each simulated cycle.

Every source gives the same document: one time axis, and per queue a list of values per series (``None`` where a
series has no point at that time), so the page draws any of them the same way.
"""

from collections import deque
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from kai.cluster.port import Raw
from kai.cluster.prometheus import PrometheusApi
from kai.components.scheduler.usage_history import decode
from kai.components.sim.timeline import TimelineSample
from kai.core.model import names
from kai.core.state.reasons import amount

GPU = 2
"""The GPU column of the usage store's (cpu, memory, gpu) amounts."""
POINTS = 240
"""Points a Prometheus range query asks for over the window."""
PROMETHEUS_SERIES = {
    "allocated": ("max by (queue_name) (kai_queue_allocated_gpus)", "queue_name"),
    "quota": ("max by (queue_name) (kai_queue_deserved_gpus)", "queue_name"),
    "fairShare": ("max by (queue_metadata_name) (kai_queue_fair_share_gpu)", "queue_metadata_name"),
    "usage": ("max by (queue_metadata_name) (kai_queue_gpu_usage)", "queue_metadata_name"),
}
"""Per series: its query and the label naming the queue (KAI's ``queue_deserved_gpus`` is the GPU quota)."""
SEEN_SERIES = ("allocated", "fairShare", "deserved", "quota")
Points = Mapping[str, Mapping[str, Iterable[tuple[float, float]]]]
"""Per queue, per series: (time, value) points."""


@dataclass
class History:
    source: str
    note: str = ""
    """Why a better source was not used ("" when none was passed over)."""
    times: list[float] = field(default_factory=list)
    queues: dict[str, dict[str, list[float | None]]] = field(default_factory=dict)

    def as_json(self) -> dict[str, Any]:
        return {
            "source": self.source,
            "note": self.note,
            "unit": "GPUs",
            "times": self.times,
            "queues": self.queues,
        }


def aligned(source: str, points: Points) -> History:
    """Points of any source on one time axis (the union of their times)."""
    times = sorted({t for series in points.values() for values in series.values() for t, _ in values})
    index = {t: i for i, t in enumerate(times)}
    queues: dict[str, dict[str, list[float | None]]] = {}
    for queue, series in sorted(points.items()):
        for name, values in series.items():
            row: list[float | None] = [None] * len(times)
            for t, value in values:
                row[index[t]] = amount(value)
            queues.setdefault(queue, {})[name] = row
    return History(source, times=times, queues=queues)


def from_timeline(samples: Sequence[TimelineSample], source: str) -> History:
    points: dict[str, dict[str, list[tuple[float, float]]]] = {}
    for sample in samples:
        for queue, numbers in sample.queues.items():
            series = points.setdefault(queue, {"allocated": [], "fairShare": []})
            series["allocated"].append((sample.time, numbers.allocated["gpu"]))
            series["fairShare"].append((sample.time, numbers.fair_share["gpu"]))
    return aligned(source, points)


def from_prometheus(prometheus: PrometheusApi, now: float, window_s: float) -> History:
    """``UsageQueryError`` (or the API server's error, through its proxy) when Prometheus cannot answer."""
    step = max(1.0, round(window_s / POINTS))
    points: dict[str, dict[str, list[tuple[float, float]]]] = {}
    for name, (query, label) in PROMETHEUS_SERIES.items():
        for labels, values in prometheus.range(query, now - window_s, now, step):
            queue = labels.get(label, "")
            if queue:
                points.setdefault(queue, {})[name] = [
                    (t, v) for t, v in values if v != names.UNLIMITED
                ]  # no bound: no point
    return aligned(prometheus.where, points)


def from_usage_store(configmap: Raw, source: str) -> History:
    """``HistoryError`` when the ConfigMap does not hold a usage history."""
    history = decode(configmap)
    points: dict[str, dict[str, list[tuple[float, float]]]] = {queue: {"allocated": []} for queue in history.queues}
    for row in range(len(history.ids)):
        seconds = float(history.last[row] - history.first[row])
        if seconds <= 0:
            continue
        for column, queue in enumerate(history.queues, start=1):
            mean = float(history.amounts[row, column, GPU]) / seconds
            points[queue]["allocated"].append((float(history.last[row]), mean))
    return aligned(source, points)


class Seen:
    """The queues' numbers at each of the dashboard's looks, the last ``size`` of them."""

    def __init__(self, size: int = POINTS) -> None:
        self._looks: deque[tuple[float, dict[str, dict[str, float]]]] = deque(maxlen=size)

    def add(self, at: float, queues: Iterable[Mapping[str, Any]]) -> None:
        """``queues``: the view document's queue rows."""
        numbers = {}
        for row in queues:
            gpu = (row.get("resources") or {}).get("gpu")
            if gpu is not None:
                numbers[row["queue"]] = {
                    name: gpu[name] for name in SEEN_SERIES if gpu.get(name, names.UNLIMITED) != names.UNLIMITED
                }
        self._looks.append((at, numbers))

    def history(self, source: str) -> History:
        points: dict[str, dict[str, list[tuple[float, float]]]] = {}
        for at, queues in self._looks:
            for queue, numbers in queues.items():
                for name, value in numbers.items():
                    points.setdefault(queue, {}).setdefault(name, []).append((at, value))
        return aligned(source, points)
