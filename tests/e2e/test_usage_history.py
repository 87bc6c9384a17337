"""Time-based fair share's usage history in a ConfigMap on a real kube-apiserver: written (created, then updated with
the object's resourceVersion), read back the same after a restart, and an unreadable one ignored."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from kube.kube_support import unique

from kai.cluster.kube import KubeCluster
from kai.components.scheduler.usage import BuiltinUsage
from kai.components.scheduler.usage_history import ConfigMapHistory
from kai.core.framework.usage.usage_config import UsageParams
from kai.core.framework.usage.usage_store import AllocationSample

T0 = 1_767_225_600.0
PARAMS = UsageParams(window_s=3600, fetch_interval_s=60)


@pytest.fixture
def cluster(control_plane) -> Iterator[KubeCluster]:
    with KubeCluster.from_kubeconfig(control_plane.kubeconfig_path, component="kai-e2e") as client:
        yield client


def feed(usage: BuiltinUsage, start: float, minutes: int) -> None:
    for minute in range(minutes):
        gpus = 16.0 if minute % 3 else 8.0
        usage.record(
            start + minute * 60, AllocationSample((64000, 512e9, 16), {"a": (1000, 1e9, gpus), "b": (0, 0, 2)})
        )


def test_the_history_survives_a_restart_through_the_api_server(cluster: KubeCluster, namespace: str) -> None:
    name = unique("usage")
    first = BuiltinUsage(PARAMS, ConfigMapHistory(cluster, namespace, name))
    feed(first, T0, 30)
    stored = cluster.get("ConfigMap", f"{namespace}/{name}")
    assert stored is not None and int(stored["metadata"]["resourceVersion"]) > 0
    assert set(stored["binaryData"]) == {"buckets"} and set(stored["data"]) == {"history.json"}
    versions = {stored["metadata"]["resourceVersion"]}
    feed(first, T0 + 30 * 60, 5)
    stored = cluster.get("ConfigMap", f"{namespace}/{name}")
    assert stored is not None
    versions.add(stored["metadata"]["resourceVersion"])
    assert len(versions) == 2  # updated in place
    now = T0 + 35 * 60
    restarted = BuiltinUsage(PARAMS, ConfigMapHistory(cluster, namespace, name))
    before, after = first.read(now), restarted.read(now)
    assert sorted(after) == ["a", "b"]
    for queue in after:
        assert after[queue] == pytest.approx(before[queue], rel=1e-6)
    assert after["a"][2] > 0.3


def test_an_unreadable_history_is_ignored(cluster: KubeCluster, namespace: str) -> None:
    name = unique("usage")
    cluster.create("ConfigMap", {"metadata": {"name": name, "namespace": namespace}, "data": {"history.json": "[]"}})
    usage = BuiltinUsage(PARAMS, ConfigMapHistory(cluster, namespace, name))
    assert usage.read(T0) == {}
    feed(usage, T0, 2)  # and it is replaced by a readable one
    assert ConfigMapHistory(cluster, namespace, name).load() is not None
