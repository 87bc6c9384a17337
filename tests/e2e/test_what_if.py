"""A what-if run on a snapshot of the test cluster, as a user runs it: ``kai snapshot`` of `kai all` on a real
kube-apiserver with a queue held back by its GPU limit, then ``kai simulate`` of that snapshot with the limit
raised, compared side by side, with the plots written."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from controlplane import ControlPlane
from kai_support import REPO, WIDE, Kai, apply, wait_until
from test_explain import bound, condition_reason, gang, kai_cli, queue_tree
from testcluster import Kwok

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
HOUR = 3600.0


def batch_gang(*args: Any) -> list[dict[str, Any]]:
    """A gang of batch pods (restartPolicy Never): a what-if run ends them after the default run time (a pod of
    restartPolicy Always, the API server's default, serves until stopped)."""
    objects = gang(*args)
    for obj in objects:
        if obj["kind"] == "Pod":
            obj["spec"]["restartPolicy"] = "Never"
    return objects


def test_a_what_if_run_on_a_snapshot_compares_two_queue_limits_and_writes_plots(
    control_plane: ControlPlane, namespace: str, kai: Kai, kwok: Kwok, tmp_path: Path
) -> None:
    pool, parent, queue = f"whatif-{namespace}", f"p-{namespace}", f"q-{namespace}"
    queue_tree(control_plane, tmp_path, parent, (queue, {"limit": 2}))
    kwok.node(f"{pool}-gpu", 8, {"pool": pool})
    apply(control_plane, tmp_path, *batch_gang(namespace, "first", queue, pool, 1, 2))
    wait_until("the first job to be bound", lambda: bound(control_plane, namespace, "first-0"))
    for name in ("second", "third"):
        apply(control_plane, tmp_path, *batch_gang(namespace, name, queue, pool, 1, 2))
    for name in ("second", "third"):
        wait_until(
            f"{name} held by the limit", lambda n=name: condition_reason(control_plane, namespace, n) == "OverLimit"
        )
    snapshot = tmp_path / "cluster.zip"
    kai_cli(control_plane, kai, "snapshot", "-o", str(snapshot))

    plots = tmp_path / "plots"
    argv = [
        sys.executable, "-m", "kai", "simulate", str(snapshot), f"--set=queue.{queue}.gpu.limit=6",
        "--period=10m", "--duration=2h", "--default-run-time=1h", f"--plot={plots}",
    ]  # fmt: skip
    done = subprocess.run(
        [*argv, "--json"], capture_output=True, text=True, timeout=300, cwd=REPO, check=False, env=WIDE
    )
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    base, changed = report["base"]["queues"][queue], report["changed"]["queues"][queue]
    assert report["changes"] == [f"queue {queue}: gpu.limit = 6"]
    # base: one job at a time (the limit), the second when the first's hour is over, the third still waiting after
    # two hours; changed: both at once, the queue's GPUs all free again after an hour
    assert (base["podsStarted"], base["pendingAtEnd"], changed["podsStarted"], changed["pendingAtEnd"]) == (1, 1, 2, 0)
    assert (base["timeToStartP50Seconds"], base["timeToStartMaxSeconds"]) == (HOUR, HOUR)
    assert (changed["timeToStartP50Seconds"], changed["timeToStartMaxSeconds"]) == (0.0, 0.0)
    assert (base["meanAllocatedGPUs"], changed["meanAllocatedGPUs"]) == (2.0, 3.0)
    assert report["changed"]["gpuUtilisationMean"] > report["base"]["gpuUtilisationMean"]

    for name in ("gpu_allocation.png", "utilisation.png", "time_to_start.png"):
        path = plots / name
        assert path.read_bytes()[:8] == PNG_MAGIC and path.stat().st_size > 10_000
        assert str(path) in report["plots"]
    page = (plots / "index.html").read_text()
    assert all(f'<img src="{name}"' in page for name in ("gpu_allocation.png", "utilisation.png", "time_to_start.png"))
    assert f"queue {queue}: gpu.limit = 6" in page

    shown = subprocess.run(argv, capture_output=True, text=True, timeout=300, cwd=REPO, check=False, env=WIDE)
    assert shown.returncode == 0 and "Traceback" not in shown.stderr, shown.stderr
    assert "Queues (base → changed)" in shown.stdout and f"wrote {plots / 'gpu_allocation.png'}" in shown.stdout
