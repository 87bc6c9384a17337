"""`kai simulate` on a generated 2,000-node / 20,000-pod manifest file: how long loading and the cycle take.

The file is what a user would write: Queues, PriorityClasses, GPU nodes, 2,500 PodGroups of 4 pods each and
10,000 ungrouped pods (the pod-grouper groups them). Prints one line; not a test:

bench simulate-<nodes>x<pods> load_s=<parse and check the file> cycle_s=<build the cluster, one cycle>
total_s=<the `kai simulate` command, end to end> cpu: load_s=… cycle_s=… total_s=…

Wall times on a shared machine depend on its load; the CPU seconds after "cpu:" do much less.
"""

import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from kai.components.sim.runner import run_scenario
from kai.components.sim.scenario import load_scenario

NODES = 2000
GROUPS = 2500
PODS_PER_GROUP = 4
UNGROUPED = 10000
QUEUES = ("team-a", "team-b", "team-c", "team-d")

_QUEUE = """---
apiVersion: scheduling.run.ai/v2
kind: Queue
metadata: {{name: {name}}}
spec:
  parentQueue: {parent}
  resources:
    gpu: {{quota: {quota}, limit: -1, overQuotaWeight: 1}}
    cpu: {{quota: -1, limit: -1, overQuotaWeight: 1}}
    memory: {{quota: -1, limit: -1, overQuotaWeight: 1}}
"""
_NODE = """---
apiVersion: v1
kind: Node
metadata:
  name: node-{n:05d}
  labels:
    nvidia.com/gpu.count: "8"
    nvidia.com/gpu.memory: "81920"
    topology.kubernetes.io/zone: zone-{zone}
status:
  allocatable: {{cpu: "64", memory: 512Gi, nvidia.com/gpu: "8", pods: "110"}}
  conditions:
  - {{type: Ready, status: "True"}}
"""
_PODGROUP = """---
apiVersion: scheduling.run.ai/v2alpha2
kind: PodGroup
metadata: {{name: job-{j}, namespace: bench}}
spec: {{queue: {queue}, priorityClassName: train, minMember: {size}}}
"""
_POD = """---
apiVersion: v1
kind: Pod
metadata:
  name: {name}
  namespace: bench
  labels: {{kai.scheduler/queue: {queue}, app: bench}}
  annotations: {{{annotations}}}
spec:
  schedulerName: kai-scheduler
  priorityClassName: train
  containers:
  - name: main
    image: nvcr.io/nvidia/pytorch:24.01-py3
    resources:
      requests: {{cpu: "2", memory: 8Gi, nvidia.com/gpu: "1"}}
      limits: {{nvidia.com/gpu: "1"}}
"""


def manifest() -> str:
    parts = [
        "apiVersion: scheduling.k8s.io/v1\nkind: PriorityClass\nmetadata: {name: train}\nvalue: 50\n",
        _QUEUE.format(name="dept", parent="''", quota=-1),
    ]
    parts += [_QUEUE.format(name=q, parent="dept", quota=NODES * 2) for q in QUEUES]
    parts += [_NODE.format(n=n, zone=n % 8) for n in range(NODES)]
    for j in range(GROUPS):
        queue = QUEUES[j % len(QUEUES)]
        parts.append(_PODGROUP.format(j=j, queue=queue, size=PODS_PER_GROUP))
        for i in range(PODS_PER_GROUP):
            parts.append(_POD.format(name=f"job-{j}-{i}", queue=queue, annotations=f"pod-group-name: job-{j}"))
    for p in range(UNGROUPED):
        parts.append(_POD.format(name=f"single-{p}", queue=QUEUES[p % len(QUEUES)], annotations=""))
    return "".join(parts)


def main() -> None:
    pods = GROUPS * PODS_PER_GROUP + UNGROUPED
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "cluster.yaml"
        path.write_text(manifest())
        wall, cpu = [time.perf_counter()], [time.process_time()]
        scenario = load_scenario(path)
        wall.append(time.perf_counter())
        cpu.append(time.process_time())
        run = run_scenario(scenario)
        wall.append(time.perf_counter())
        cpu.append(time.process_time())
        binds = run.cycles[-1].outcome.counts["binds"]
        subprocess.run(
            [sys.executable, "-m", "kai", "simulate", str(path), "--json"], check=True, stdout=subprocess.DEVNULL
        )
        wall.append(time.perf_counter())
        child = resource.getrusage(resource.RUSAGE_CHILDREN)
    print(
        f"bench simulate-{NODES}x{pods} load_s={wall[1] - wall[0]:.2f} cycle_s={wall[2] - wall[1]:.2f} "
        f"total_s={wall[3] - wall[2]:.2f} cpu: load_s={cpu[1] - cpu[0]:.2f} cycle_s={cpu[2] - cpu[1]:.2f} "
        f"total_s={child.ru_utime + child.ru_stime:.2f} binds={binds}"
    )


if __name__ == "__main__":
    main()
