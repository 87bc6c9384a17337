"""End-to-end binding throughput on a real kube-apiserver: 1,000 single-GPU pods on 100 GPU nodes.

Starts the test control plane (hack/controlplane.sh's binaries), creates nodes, a queue and the pods through the
API, then starts `kai all` and measures until every pod has a node. Prints one line; not a test.

bench e2e nodes=<n> pods=<m> seconds=<s> pods_per_s=<r>   (16 GPUs per node, so every pod fits)
"""

import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests" / "e2e"))

from controlplane import find_binaries, install_crds, start  # noqa: E402

NODES, PODS, GPUS_PER_NODE = 100, 1000, 16


def main() -> None:
    workdir = Path(tempfile.mkdtemp(prefix="kai-e2e-bench-"))
    cp = start(find_binaries(), workdir)
    try:
        install_crds(cp)
        cp.kubectl("apply", "-f", str(REPO / "deploy" / "priority-classes.yaml"))
        resources = {"cpu": "128", "memory": "1Ti", "pods": "110", "nvidia.com/gpu": str(GPUS_PER_NODE)}
        nodes = [{"apiVersion": "v1", "kind": "Node", "metadata": {"name": f"gpu-{i:03d}"}} for i in range(NODES)]
        (workdir / "nodes.yaml").write_text(yaml.safe_dump_all(nodes))
        cp.kubectl("apply", "-f", str(workdir / "nodes.yaml"))
        status = json.dumps({"status": {"capacity": resources, "allocatable": resources}})
        for i in range(NODES):
            cp.kubectl("patch", "node", f"gpu-{i:03d}", "--subresource=status", "--type=merge", "-p", status)
            cp.kubectl("taint", "nodes", f"gpu-{i:03d}", "node.kubernetes.io/not-ready:NoSchedule-", check=False)
        pods = [
            {
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": {
                    "name": f"p{i:04d}",
                    "namespace": "default",
                    "labels": {"kai.scheduler/queue": "default-queue"},
                },
                "spec": {
                    "schedulerName": "kai-scheduler",
                    "containers": [{"name": "c", "image": "busybox", "resources": {"limits": {"nvidia.com/gpu": "1"}}}],
                },
            }
            for i in range(PODS)
        ]
        (workdir / "pods.yaml").write_text(yaml.safe_dump_all(pods))
        cp.kubectl("apply", "--server-side", "-f", str(workdir / "pods.yaml"))
        started = time.perf_counter()
        argv = [sys.executable, "-m", "kai", "all", f"--kubeconfig={cp.kubeconfig_path}", "--schedule-period=1s"]
        with (workdir / "kai.log").open("wb") as log:
            kai = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, cwd=REPO)
        try:
            while True:
                _, listed_pods = cp.request("/api/v1/namespaces/default/pods")
                listed = listed_pods["items"]
                bound = sum(1 for pod in listed if pod["spec"].get("nodeName"))
                if bound == PODS:
                    break
                if time.perf_counter() - started > 600:
                    raise SystemExit(f"only {bound} of {PODS} pods bound after 600 s; see {workdir / 'kai.log'}")
                time.sleep(1.0)
            seconds = time.perf_counter() - started
        finally:
            kai.terminate()
            kai.wait(timeout=30)
        print(f"bench e2e nodes={NODES} pods={PODS} seconds={seconds:.2f} pods_per_s={PODS / seconds:.0f}", flush=True)
    finally:
        cp.stop()


if __name__ == "__main__":
    main()
