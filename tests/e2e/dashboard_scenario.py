"""A research cluster of 1,000 GPU nodes and 10,000 pods as a scenario file, for the dashboard's browser tests and
its benchmark (bench/dashboard_bench.py): what `kai dashboard -f` is asked to show at that size.

- 1,000 nodes of 8 GPUs (80 GB each), in 8 zones;
- department `research` over `team-llm` (quota 2,400 GPUs, limit 3,000), `team-vision` (2,000) and `team-speech`
  (1,000), and `sandbox` whose displayName is markup (the dashboard must show it as text);
- 6,000 one-GPU pods running on the first 750 nodes, some finishing within the simulated hour (run times of 30
  minutes to 6 hours);
- 400 pods asking half a GPU (`gpu-fraction: "0.5"`), so shared GPUs are in use after the first cycle;
- the gang `llm-pretrain` of team-llm: 128 pods of 8 GPUs, which its queue's limit keeps waiting;
- the gang `vision-giant` of team-vision: 4 pods of 16 GPUs, larger than any node;
- 3,468 two-GPU pods of the three teams waiting, more than the free GPUs hold;
- a clock of one cycle every 10 simulated minutes for an hour, so each queue has a history.

Written as plain YAML text (formatting 10,000 objects through a YAML emitter takes longer than the test).
"""

from __future__ import annotations

from pathlib import Path

NODES = 1000
GPUS_PER_NODE = 8
RUNNING_NODES = 750
RUNNING = RUNNING_NODES * GPUS_PER_NODE
SHARED = 400
GANG = "llm-pretrain"
GANG_SIZE = 128
GANG_GPUS = 8
GIANT = "vision-giant"
"""A gang of team-vision whose pods ask 16 GPUs each: no node has as many (what it needs is a smaller request)."""
GIANT_SIZE = 4
WAITING = 10_000 - RUNNING - SHARED - GANG_SIZE - GIANT_SIZE
TEAMS = ("team-llm", "team-vision", "team-speech")
MARKUP = '<img src=x onerror="window.kaiInjected=1"><b>x</b>'
"""The displayName of queue `sandbox`: shown as these characters, never as an image or bold text."""
NOW = "2026-03-02T09:00:00Z"

_HEAD = f"""name: research cluster at {NODES} nodes
now: "{NOW}"
clock: {{period: 10m, duration: 1h}}
config:
  actions: allocate, consolidation, reclaim, preempt, stalegangeviction
objects:
- apiVersion: scheduling.k8s.io/v1
  kind: PriorityClass
  metadata: {{name: train}}
  value: 50
"""
_QUEUE = """- apiVersion: scheduling.run.ai/v2
  kind: Queue
  metadata: {{name: {name}, creationTimestamp: "2026-01-01T00:00:00Z"}}
  spec:
    {extra}
    resources:
      gpu: {{quota: {quota}, limit: {limit}, overQuotaWeight: {weight}}}
      cpu: {{quota: -1, limit: -1, overQuotaWeight: 1}}
      memory: {{quota: -1, limit: -1, overQuotaWeight: 1}}
"""
_NODE = """- apiVersion: v1
  kind: Node
  metadata:
    name: node-{n:04d}
    labels: {{nvidia.com/gpu.count: "8", nvidia.com/gpu.memory: "81920", topology.kubernetes.io/zone: zone-{zone}}}
  status:
    allocatable: {{cpu: "128", memory: 1Ti, nvidia.com/gpu: "8", pods: "110"}}
    conditions: [{{type: Ready, status: "True"}}]
"""
_POD = """- apiVersion: v1
  kind: Pod
  metadata:
    name: {name}
    namespace: {namespace}
    creationTimestamp: "{created}"
    labels: {{kai.scheduler/queue: {queue}}}
    annotations: {{{annotations}}}
  spec:
    schedulerName: kai-scheduler
    priorityClassName: train{node}
    containers:
    - name: main
      image: nvcr.io/nvidia/pytorch:25.01-py3
      resources:
        requests: {{cpu: "1", memory: 8Gi{gpus}}}
        limits: {{{limits}}}
  status: {{phase: {phase}}}
"""
_PODGROUP = """- apiVersion: scheduling.run.ai/v2alpha2
  kind: PodGroup
  metadata: {{name: {name}, namespace: {namespace}, creationTimestamp: "2026-03-02T08:12:00Z"}}
  spec: {{queue: {queue}, priorityClassName: train, minMember: {size}}}
"""


def _pod(
    name: str,
    namespace: str,
    queue: str,
    *,
    gpus: int = 1,
    node: str = "",
    annotations: str = "",
    created: str = "2026-03-02T08:00:00Z",
) -> str:
    whole = f", nvidia.com/gpu: '{gpus}'" if gpus else ""
    return _POD.format(
        name=name,
        namespace=namespace,
        queue=queue,
        created=created,
        annotations=annotations,
        node=f"\n    nodeName: {node}" if node else "",
        gpus=whole,
        limits=f"nvidia.com/gpu: '{gpus}'" if gpus else "",
        phase="Running" if node else "Pending",
    )


def scenario_text() -> str:
    parts = [_HEAD, _QUEUE.format(name="research", extra="displayName: Research", quota=-1, limit=-1, weight=1)]
    quotas = {"team-llm": (2400, 3000), "team-vision": (2000, -1), "team-speech": (1000, -1)}
    for team, (quota, limit) in quotas.items():
        parts.append(_QUEUE.format(name=team, extra="parentQueue: research", quota=quota, limit=limit, weight=1))
    sandbox = "parentQueue: research\n    displayName: '" + MARKUP.replace("'", "''") + "'"
    parts.append(_QUEUE.format(name="sandbox", extra=sandbox, quota=0, limit=-1, weight=1))
    parts += [_NODE.format(n=n, zone=n % 8) for n in range(NODES)]
    for index in range(RUNNING):
        node, team = f"node-{index // GPUS_PER_NODE:04d}", TEAMS[index % len(TEAMS)]
        run_time = f"simulate.kai.scheduler/run-time: {30 + index % 12 * 30}m"
        parts.append(_pod(f"run-{index:05d}", team, team, node=node, annotations=run_time))
    for index in range(SHARED):
        parts.append(_pod(f"notebook-{index:03d}", "sandbox", "sandbox", gpus=0, annotations='gpu-fraction: "0.5"'))
    for name, namespace, queue, size, gpus in (
        (GANG, "llm", "team-llm", GANG_SIZE, GANG_GPUS),
        (GIANT, "vision", "team-vision", GIANT_SIZE, 16),
    ):
        parts.append(_PODGROUP.format(name=name, namespace=namespace, queue=queue, size=size))
        for index in range(size):
            parts.append(_pod(f"{name}-{index}", namespace, queue, gpus=gpus, annotations=f"pod-group-name: {name}"))
    for index in range(WAITING):
        team = TEAMS[index % len(TEAMS)]
        minute = index % 50
        created = f"2026-03-02T08:{minute:02d}:00Z"
        parts.append(_pod(f"wait-{index:05d}", team, team, gpus=2, created=created))
    return "".join(parts)


def write_scenario(folder: Path) -> Path:
    path = folder / f"research-{NODES}-nodes.yaml"
    path.write_text(scenario_text())
    return path
