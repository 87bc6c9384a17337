"""Two schedulers sharding one cluster by node pool (KAI's ``--partition-label-value``), on a real kube-apiserver:
each binds only its pool's PodGroups onto its pool's nodes, neither reports the other's objects as bad, and a
PodGroup that used up its ``schedulingBackoff`` in one pool waits there, named by its pool, until its owner moves it
to the other, which then takes it. ``kai explain`` and ``kai snapshot`` look at the pool of the scheduler they ask.
"""

from __future__ import annotations

import json
import zipfile
from pathlib import Path
from typing import Any

from controlplane import ControlPlane
from kai_support import (
    PRIORITY_CLASSES,
    Kai,
    apply,
    gpu_pod,
    kai_cli,
    kubectl_json,
    pods,
    queue,
    wait_cycles,
    wait_until,
)
from testcluster import Kwok

NODE_POOL = "kai.scheduler/node-pool"


def podgroup(namespace: str, name: str, queue_name: str, labels: dict[str, str], **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "scheduling.run.ai/v2alpha2",
        "kind": "PodGroup",
        "metadata": {"name": name, "namespace": namespace, "labels": labels},
        "spec": {"minMember": 1, "queue": queue_name, **spec},
    }


def shard_queues(namespace: str, shard: str) -> tuple[list[dict[str, Any]], str]:
    """A parent queue and its child, both of the shard's pool (a pool's scheduler sees only its own queues)."""
    unlimited = {"quota": -1, "limit": -1, "overQuotaWeight": 1}
    resources = {"gpu": unlimited, "cpu": unlimited, "memory": unlimited}
    parent, child = f"{namespace}-top", f"{namespace}-shard"

    def make(name: str, **spec: Any) -> dict[str, Any]:
        return {
            "apiVersion": "scheduling.run.ai/v2",
            "kind": "Queue",
            "metadata": {"name": name, "labels": {NODE_POOL: shard}},
            "spec": {"resources": resources, **spec},
        }

    return [make(parent), make(child, parentQueue=parent)], child


def node_of(cp: ControlPlane, namespace: str, pod: str) -> str:
    return str(pods(cp, namespace)[pod]["spec"].get("nodeName") or "")


def events(cp: ControlPlane, namespace: str, reason: str) -> list[dict[str, Any]]:
    return list(kubectl_json(cp, "get", "events", "-n", namespace, "--field-selector", f"reason={reason}")["items"])


def test_two_shards_each_schedule_their_own_pool(
    control_plane: ControlPlane, kwok: Kwok, namespace: str, tmp_path: Path
) -> None:
    cp, shard = control_plane, f"shard-{namespace}"
    default_node, shard_node = f"{namespace}-default", f"{namespace}-shard"
    kwok.node(default_node, 4, {"pool": namespace})
    kwok.node(shard_node, 1, {"pool": namespace, NODE_POOL: shard})
    default_queue = f"q-{namespace}"
    queue(cp, tmp_path, default_queue)
    queues, shard_queue = shard_queues(namespace, shard)
    apply(cp, tmp_path, *queues)
    cp.kubectl("apply", "-f", str(PRIORITY_CLASSES))
    # Every pod's node selector matches both nodes: only the pools keep each pod to its own.
    default_kai = Kai(cp, tmp_path / "kai-all.log")
    shard_kai = Kai(cp, tmp_path / "kai-shard.log", f"--partition-label-value={shard}", component="scheduler")
    try:
        apply(
            cp,
            tmp_path,
            podgroup(namespace, "a", default_queue, {}),
            gpu_pod(namespace, "a-0", default_queue, namespace, 1, "a"),
            podgroup(namespace, "b", shard_queue, {NODE_POOL: shard}),
            gpu_pod(namespace, "b-0", shard_queue, namespace, 1, "b"),
        )
        wait_until("a-0 and b-0 bound", lambda: node_of(cp, namespace, "a-0") and node_of(cp, namespace, "b-0"))
        assert (node_of(cp, namespace, "a-0"), node_of(cp, namespace, "b-0")) == (default_node, shard_node)
        scheduled = {e["involvedObject"]["name"]: e["message"] for e in events(cp, namespace, "Scheduled")}
        assert scheduled["b-0"].endswith(f"to node {shard_node} at node-pool {shard}"), scheduled
        assert scheduled["a-0"].endswith(f"to node {default_node} at node-pool default"), scheduled

        # c does not fit in the shard (its one GPU is b-0's), and is tried there once.
        apply(
            cp,
            tmp_path,
            podgroup(namespace, "c", shard_queue, {NODE_POOL: shard}, schedulingBackoff=1),
            gpu_pod(namespace, "c-0", shard_queue, namespace, 1, "c"),
        )

        def tried_in_shard() -> dict[str, Any] | None:
            """c's scheduling condition once it was tried (not kai's own NotReady, while c-0 is not seen yet)."""
            found = kubectl_json(cp, "get", "podgroup", "c", "-n", namespace)
            conditions = (found.get("status") or {}).get("schedulingConditions") or []
            tried = [c for c in conditions if (c.get("reasons") or [{}])[0].get("reason") != "NotReady"]
            return tried[-1] if tried else None

        condition = wait_until("c's scheduling condition", tried_in_shard)
        assert condition["nodePool"] == shard, condition
        assert condition["message"].startswith(f"Node-Pool '{shard}': "), condition
        # The default pool's scheduler, which has a free GPU, leaves c alone, and reports nothing of the shard's.
        wait_cycles(default_kai, 3)
        wait_cycles(shard_kai, 3)
        assert node_of(cp, namespace, "c-0") == ""
        assert events(cp, namespace, "InvalidObject") == []
        # Asked of each pool's scheduler, `kai explain` says c is left out in its pool, or names c's pool and the flag
        # that looks there; `kai snapshot` of the shard holds the shard's node only, and says which pool it is.
        told = json.loads(kai_cli(cp, shard_kai, "explain", "podgroup", "c", "-n", namespace, "-o", "json"))
        assert told["state"] == "left out", told
        told = json.loads(kai_cli(cp, default_kai, "explain", "podgroup", "c", "-n", namespace, "-o", "json"))
        assert (told["state"], told["partitionLabelValue"]) == ("other pool", shard), told
        snapshot = tmp_path / "shard.zip"
        kai_cli(cp, default_kai, "snapshot", "-o", str(snapshot), f"--partition-label-value={shard}")
        document = json.loads(zipfile.ZipFile(snapshot).read("snapshot.json"))
        partition = {"NodePoolLabelKey": NODE_POOL, "NodePoolLabelValue": shard}
        assert document["schedulerParams"]["partitionParams"] == partition
        assert [node["metadata"]["name"] for node in document["rawObjects"]["nodes"]] == [shard_node]

        # Its owner moves c to the default pool, where it was never tried, and to a queue of that pool (a pool's
        # scheduler sees only its own queues): that scheduler takes it.
        moved = {"metadata": {"labels": {NODE_POOL: None}}, "spec": {"queue": default_queue}}
        cp.kubectl("patch", "podgroup", "c", "-n", namespace, "--type=merge", "-p", json.dumps(moved))
        wait_until("c-0 bound", lambda: node_of(cp, namespace, "c-0"))
        assert node_of(cp, namespace, "c-0") == default_node
        assert events(cp, namespace, "InvalidObject") == []
        assert not [line for kai in (default_kai, shard_kai) for line in kai.log_lines("Traceback")]
    finally:
        shard_kai.stop()
        default_kai.stop()
        print(shard_kai.log.read_text()[-10000:])  # shown when the test fails
