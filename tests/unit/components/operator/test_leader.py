"""The scheduler Service routed to the Lease holder (KAI's endpointSliceForShard), through the reconciler."""

from typing import Any

from kai.components.operator.leader import holder_pod_name
from kai.components.operator.reconciler import Reconciler

from .test_operator import IMAGE, NS, config, reconciled, shard

TWO = {"scheduler": {"replicas": 2}}
SERVICE = f"{NS}/kai-scheduler-default"
SLICE = f"{SERVICE}-leader"


def lease(holder: str, name: str = "kai-scheduler") -> dict[str, Any]:
    return {
        "apiVersion": "coordination.k8s.io/v1",
        "kind": "Lease",
        "metadata": {"name": name, "namespace": NS},
        "spec": {"holderIdentity": holder},
    }


def pod(name: str, ip: str) -> dict[str, Any]:
    meta = {"name": name, "namespace": NS, "uid": f"{name}-uid"}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "status": {"podIP": ip}}


def ready_ips(slice_: dict[str, Any]) -> list[str]:
    return [a for e in slice_["endpoints"] if e["conditions"]["ready"] for a in e["addresses"]]


def test_holder_identity_is_the_pod_name_before_the_first_underscore():
    assert holder_pod_name(lease("kai-scheduler-default-7b5dc-x2x9q_0f3c-11aa")) == "kai-scheduler-default-7b5dc-x2x9q"
    assert holder_pod_name(lease("")) == "" == holder_pod_name(None)


def test_one_replica_selects_its_pod_and_keeps_no_slice():
    cluster = reconciled(config(), shard())
    assert cluster.get("Service", SERVICE)["spec"]["selector"] == {"app": "kai-scheduler-default"}
    assert cluster.get("EndpointSlice", SLICE) is None


def test_two_replicas_route_the_service_to_the_lease_holder_and_follow_a_new_one():
    pods = (pod("sched-a", "10.0.0.1"), pod("sched-b", "10.0.0.2"))
    cluster = reconciled(config(TWO), shard(), lease("sched-a_1"), *pods)
    assert "selector" not in cluster.get("Service", SERVICE)["spec"]
    routed = cluster.get("EndpointSlice", SLICE)
    assert routed["metadata"]["labels"]["kubernetes.io/service-name"] == "kai-scheduler-default"
    assert routed["ports"] == [{"name": "http-metrics", "port": 8080, "protocol": "TCP"}]
    assert ready_ips(routed) == ["10.0.0.1"]
    assert routed["endpoints"][0]["targetRef"]["name"] == "sched-a"

    reconciler = Reconciler(cluster, IMAGE)
    cluster.delete("Pod", f"{NS}/sched-a")
    cluster.apply("Lease", lease("sched-b_2"))
    reconciler.reconcile()
    assert ready_ips(cluster.get("EndpointSlice", SLICE)) == ["10.0.0.2"]


def test_no_holder_or_a_holder_without_an_ip_leaves_the_slice_empty():
    assert cluster_ips(reconciled(config(TWO), shard())) == []
    assert cluster_ips(reconciled(config(TWO), shard(), lease("sched-a_1"), pod("sched-a", ""))) == []


def cluster_ips(cluster: Any) -> list[str]:
    return ready_ips(cluster.get("EndpointSlice", SLICE))


def test_a_partitioned_shard_follows_its_own_lease():
    cluster = reconciled(
        config(TWO),
        shard("pool-a", {"partitionLabelValue": "a"}),
        lease("sched-a_1", "kai-scheduler-a"),
        pod("sched-a", "10.0.0.1"),
    )
    assert ready_ips(cluster.get("EndpointSlice", f"{NS}/kai-scheduler-pool-a-leader")) == ["10.0.0.1"]


def test_back_to_one_replica_the_service_selects_again_and_the_slice_goes():
    cluster = reconciled(config(TWO), shard(), lease("sched-a_1"), pod("sched-a", "10.0.0.1"))
    cluster.apply("Config", config())
    Reconciler(cluster, IMAGE).reconcile()
    assert cluster.get("Service", SERVICE)["spec"]["selector"] == {"app": "kai-scheduler-default"}
    assert cluster.get("EndpointSlice", SLICE) is None
