"""`kai simulate` over time with CronJobs: 50 CronJobs (``*/10`` at staggered minutes, 25m pods of 1 GPU, half of
them ``concurrencyPolicy: Forbid``) on 20 8-GPU nodes over 6 simulated hours at a 5m period. Prints one line; not a
test:

bench simulate-cron cycles=<n> binds=<n> completed=<pods that ran their run time> seconds=<s> cpu_s=<s>
signature=<hash of every cycle's binds, evictions and GPUs per queue: equal before and after a change>

Wall times on a shared machine depend on its load; the CPU seconds do much less.
"""

import hashlib
import tempfile
import time
from pathlib import Path
from typing import Any

import yaml

from kai.components.sim.runner import run_scenario
from kai.components.sim.scenario import ClockSpec, load_scenario

CRON_JOBS = 50
NODES = 20
UNLIMITED = {"quota": -1, "limit": -1, "overQuotaWeight": 1}


def manifest() -> list[dict[str, Any]]:
    objects: list[dict[str, Any]] = [
        {
            "apiVersion": "scheduling.run.ai/v2",
            "kind": "Queue",
            "metadata": {"name": "team"},
            "spec": {"resources": dict.fromkeys(("gpu", "cpu", "memory"), UNLIMITED)},
        }
    ]
    allocatable = {"cpu": "64", "memory": "512Gi", "nvidia.com/gpu": "8", "pods": "110"}
    objects += [
        {"apiVersion": "v1", "kind": "Node", "metadata": {"name": f"n{i}"}, "status": {"allocatable": allocatable}}
        for i in range(NODES)
    ]
    container = {"name": "main", "image": "busybox", "resources": {"limits": {"nvidia.com/gpu": "1"}}}
    template = {
        "metadata": {
            "labels": {"kai.scheduler/queue": "team"},
            "annotations": {"simulate.kai.scheduler/run-time": "25m"},
        },
        "spec": {"schedulerName": "kai-scheduler", "restartPolicy": "Never", "containers": [container]},
    }
    for c in range(CRON_JOBS):
        spec = {
            "schedule": f"{c % 10}-59/10 * * * *",
            "concurrencyPolicy": "Forbid" if c % 2 else "Allow",
            "jobTemplate": {"spec": {"template": template}},
        }
        meta = {"name": f"cron-{c}", "namespace": "default"}
        objects.append({"apiVersion": "batch/v1", "kind": "CronJob", "metadata": meta, "spec": spec})
    return objects


def main() -> None:
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "cron.yaml"
        path.write_text(yaml.safe_dump_all(manifest()))
        scenario = load_scenario(path, clock=ClockSpec(300, 6 * 3600))
        wall, cpu = time.perf_counter(), time.process_time()
        run = run_scenario(scenario)
        wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    decisions = [
        (t.cycle, t.binds, t.evictions, sorted((q, s.allocated["gpu"]) for q, s in t.queues.items()))
        for t in run.timeline
    ]
    print(
        f"bench simulate-cron cycles={len(run.timeline)} binds={sum(t.binds for t in run.timeline)} "
        f"completed={run.completed} seconds={wall:.2f} cpu_s={cpu:.2f} "
        f"signature={hashlib.sha256(repr(decisions).encode()).hexdigest()[:16]}"
    )


if __name__ == "__main__":
    main()
