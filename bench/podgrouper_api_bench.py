"""Pod-grouper throughput on a real kube-apiserver: a Job of 1,000 pods (one PodGroup) and 100 Deployments of 10 pods
(a PodGroup per pod), their pods created as the controllers would, then one pod-grouper started; measures until every
pod names its PodGroup. Prints one line; not a test.

bench podgrouper-api pods=<n> podgroups=<g> seconds=<s> pods_per_s=<r>
"""

import json
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import yaml

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests" / "e2e"))

from controlplane import ControlPlane, find_binaries, install_crds, start  # noqa: E402

from kai.cluster.kube import KubeCluster  # noqa: E402
from kai.components.runtime.loops import RuntimeOptions, run  # noqa: E402
from kai.components.shared.components import kinds_for  # noqa: E402

JOB_PODS, DEPLOYMENTS, REPLICAS = 1000, 100, 10
CONTAINERS = [{"name": "main", "image": "busybox"}]


def _apply(cp: ControlPlane, workdir: Path, documents: list[dict[str, Any]]) -> None:
    path = workdir / f"apply-{time.monotonic_ns()}.yaml"
    path.write_text(yaml.safe_dump_all(documents))
    cp.kubectl("apply", "-f", str(path))


def _uids(cp: ControlPlane, resource: str) -> dict[str, str]:
    items = json.loads(cp.kubectl("get", resource, "-n", "default", "-o", "json").stdout)["items"]
    return {item["metadata"]["name"]: item["metadata"]["uid"] for item in items}


def _meta(name: str, kind: str = "", api_version: str = "", owner: str = "", uid: str = "") -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "namespace": "default"}
    if owner:
        meta["ownerReferences"] = [{"apiVersion": api_version, "kind": kind, "name": owner, "uid": uid}]
    return meta


def _template(app: str) -> dict[str, Any]:
    return {
        "selector": {"matchLabels": {"app": app}},
        "template": {"metadata": {"labels": {"app": app}}, "spec": {"containers": CONTAINERS}},
    }


def _workloads(cp: ControlPlane, workdir: Path) -> list[dict[str, Any]]:
    """The Job, Deployments and ReplicaSets through the API; returns their pods, owned as the controllers own them."""
    template = {"spec": {"restartPolicy": "Never", "containers": CONTAINERS}}
    job = {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": _meta("etl"),
        "spec": {"parallelism": JOB_PODS, "template": template},
    }
    deployments = [
        {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": _meta(f"web-{d}"), "spec": _template(f"web-{d}")}
        for d in range(DEPLOYMENTS)
    ]
    _apply(cp, workdir, [job, *deployments])
    replicasets = [
        {
            "apiVersion": "apps/v1",
            "kind": "ReplicaSet",
            "metadata": _meta(f"{name}-rs", "Deployment", "apps/v1", name, uid),
            "spec": _template(name),
        }
        for name, uid in _uids(cp, "deployments").items()
    ]
    _apply(cp, workdir, replicasets)
    spec = {"schedulerName": "kai-scheduler", "containers": CONTAINERS}
    job_uid = _uids(cp, "jobs")["etl"]
    pods = [
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": _meta(f"etl-{i}", "Job", "batch/v1", "etl", job_uid),
            "spec": spec,
        }
        for i in range(JOB_PODS)
    ]
    for name, uid in _uids(cp, "replicasets").items():
        pods += [
            {
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": _meta(f"{name}-{i}", "ReplicaSet", "apps/v1", name, uid),
                "spec": spec,
            }
            for i in range(REPLICAS)
        ]
    return pods


def main() -> None:
    workdir = Path(tempfile.mkdtemp(prefix="kai-podgrouper-bench-"))
    cp = start(find_binaries(), workdir)
    try:
        install_crds(cp)
        cp.kubectl("apply", "-f", str(REPO / "deploy" / "priority-classes.yaml"))
        pods = _workloads(cp, workdir)
        _apply(cp, workdir, pods)
        cluster = KubeCluster.from_kubeconfig(cp.kubeconfig_path, kinds=sorted(kinds_for({"podgrouper"})))
        cluster.start()
        cluster.wait_for_sync(60)
        stop = threading.Event()
        started = time.perf_counter()
        grouper = threading.Thread(
            target=run,
            args=(cluster, {"podgrouper"}, RuntimeOptions(write_workers=16, max_concurrent_reconciles=10), stop),
        )
        grouper.start()
        while sum(
            1 for p in cluster.list("Pod") if (p["metadata"].get("annotations") or {}).get("pod-group-name")
        ) < len(pods):
            time.sleep(1.0)
        seconds = time.perf_counter() - started
        podgroups = len(cluster.list("PodGroup"))
        rate = len(pods) / seconds
        print(
            f"bench podgrouper-api pods={len(pods)} podgroups={podgroups} seconds={seconds:.2f} pods_per_s={rate:.0f}"
        )
        stop.set()
        grouper.join()
        cluster.close()
    finally:
        cp.stop()


if __name__ == "__main__":
    main()
