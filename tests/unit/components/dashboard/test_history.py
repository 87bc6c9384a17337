"""Each queue's history from every source the dashboard reads, on one time axis: a Prometheus' range queries (the
queue label each metric names the queue by), the scheduler's usage store as its ConfigMap holds it, the dashboard's
own looks, and a file's simulated run."""

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest
from dashboard_support import cluster_file, file_board

from kai.cluster.prometheus import PrometheusApi, UsageQueryError
from kai.components.dashboard.history import PROMETHEUS_SERIES, Seen, from_prometheus, from_usage_store
from kai.components.scheduler.usage_history import HistoryError, encode
from kai.core.framework.usage.usage_config import UsageParams
from kai.core.framework.usage.usage_store import AllocationSample, UsageStore

T0 = 1_767_225_600.0


def matrix(*series: tuple[dict[str, str], list[tuple[float, float]]]) -> dict[str, Any]:
    result = [{"metric": labels, "values": [[t, str(v)] for t, v in points]} for labels, points in series]
    return {"status": "success", "data": {"resultType": "matrix", "result": result}}


def test_prometheus_series_are_keyed_by_each_metrics_queue_label_on_one_time_axis() -> None:
    answers = {
        PROMETHEUS_SERIES["allocated"][0]: matrix(({"queue_name": "a"}, [(T0 - 60, 2), (T0, 4)])),
        PROMETHEUS_SERIES["quota"][0]: matrix(({"queue_name": "a"}, [(T0, 8)])),
        PROMETHEUS_SERIES["fairShare"][0]: matrix(({"queue_metadata_name": "a"}, [(T0 - 60, 6), (T0, 6)])),
        PROMETHEUS_SERIES["usage"][0]: matrix(({"queue_metadata_name": "b"}, [(T0, 0.25)]), ({}, [(T0, 1)])),
    }
    asked: list[Mapping[str, str]] = []

    def get(path: str, arguments: Mapping[str, str]) -> object:
        assert path == "query_range"
        asked.append(arguments)
        return answers[arguments["query"]]

    found = from_prometheus(PrometheusApi("Prometheus at test", get), T0, 3600)
    assert found.as_json() == {
        "source": "Prometheus at test",
        "note": "",
        "unit": "GPUs",
        "times": [T0 - 60, T0],
        "queues": {
            "a": {"allocated": [2, 4], "quota": [None, 8], "fairShare": [6, 6]},
            "b": {"usage": [None, 0.25]},
        },
    }
    assert {(a["start"], a["end"], a["step"]) for a in asked} == {(f"{T0 - 3600:.3f}", f"{T0:.3f}", "15")}

    def refuses(path: str, arguments: Mapping[str, str]) -> object:
        return {"status": "error", "errorType": "bad_data", "error": "parse error"}

    with pytest.raises(UsageQueryError, match="bad_data: parse error"):
        from_prometheus(PrometheusApi("Prometheus at test", refuses), T0, 3600)


def test_the_usage_store_gives_each_queues_mean_allocation_per_bucket() -> None:
    store = UsageStore(UsageParams(window_s=3600, query_resolution_s=60))
    store.record(T0, AllocationSample((64000, 512e9, 16), {"a": (0, 0, 8), "b": (0, 0, 2)}))
    store.record(T0 + 120, AllocationSample((64000, 512e9, 16), {"a": (0, 0, 4), "b": (0, 0, 2)}))
    store.record(T0 + 240, AllocationSample((64000, 512e9, 16), {"a": (0, 0, 4)}))
    data, binary = encode(store.history())
    found = from_usage_store({"data": data, "binaryData": binary}, "the usage store")
    assert found.times == [T0 + 60, T0 + 120, T0 + 180, T0 + 240]
    assert found.queues == {"a": {"allocated": [8, 8, 4, 4]}, "b": {"allocated": [2, 2, 2, 2]}}
    with pytest.raises(HistoryError):
        from_usage_store({"data": {"history.json": "[]"}}, "the usage store")


def test_the_dashboards_own_looks_keep_the_numbers_it_saw() -> None:
    seen = Seen(size=2)

    def row(queue: str, allocated: float, deserved: float) -> dict[str, Any]:
        gpu = {"allocated": allocated, "fairShare": 4, "deserved": deserved, "quota": -1}
        return {"queue": queue, "resources": {"gpu": gpu}}

    seen.add(T0, [row("a", 1, 4)])
    seen.add(T0 + 5, [row("a", 2, 4), row("b", 3, -1)])
    seen.add(T0 + 10, [row("a", 3, 4), {"queue": "broken", "problem": "unusable"}])
    history = seen.history("the looks").as_json()
    assert history["times"] == [T0 + 5, T0 + 10]  # the oldest look is gone
    assert history["queues"] == {
        "a": {"allocated": [2, 3], "fairShare": [4, 4], "deserved": [4, 4]},  # quota -1 (unlimited) is no point
        "b": {"allocated": [3, None], "fairShare": [4, None]},
    }


def test_a_file_shows_its_simulated_run_cycle_by_cycle(tmp_path: Path) -> None:
    board = file_board(cluster_file(tmp_path, cycles=3))
    board.refresh()
    history = board.current.document["history"]
    assert history["source"] == "the simulated run of small cluster, cycle by cycle"
    assert len(history["times"]) == 3 and history["times"][1] - history["times"][0] == 600
    assert history["queues"]["a"] == {"allocated": [2, 2, 2], "fairShare": [4, 4, 4]}
    assert history["queues"]["b"]["allocated"] == [0.5, 0.5, 0.5]
    cycles = board.current.document["cycles"]  # every cycle of the run, though it keeps only its last session
    assert cycles["source"] == "the run of small cluster"
    assert [(c["cycle"], c["binds"], c["unschedulable"]) for c in cycles["cycles"]] == [(1, 1, 1), (2, 0, 1), (3, 0, 1)]
