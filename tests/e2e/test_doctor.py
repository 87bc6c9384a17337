"""`kai doctor` on the real control plane, as an operator runs it: healthy with `kai all` running and the default
queues as NVCF wants them; a broken default queue prints NVCF's texts and exits 1; the webhooks are called as the
API server calls them; a read RBAC refuses is its check's error; no cluster to examine is one line and exit 2."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from admission_support import Admission, queue
from controlplane import REPO, ControlPlane, free_port
from kai_support import Kai, wait_until

from kai.components.admission import webhooks

HEALTHY_QUEUES = (queue("default-parent-queue"), queue("default-queue", "default-parent-queue"))


def doctor(kubeconfig: Path, *args: str) -> subprocess.CompletedProcess[str]:
    argv = [sys.executable, "-m", "kai", "doctor", f"--kubeconfig={kubeconfig}", *args]
    return subprocess.run(argv, capture_output=True, text=True, timeout=120, check=False, cwd=REPO)


def findings(cp: ControlPlane, kai: Kai, check: str) -> tuple[bool, list[tuple[str, str]]]:
    """The JSON report's verdict and the (level, message) pairs of one check."""
    done = doctor(cp.kubeconfig_path, "--nvcf", f"--probe=127.0.0.1:{kai.probe_port}", "-o", "json")
    assert done.returncode in (0, 1) and not done.stderr, done.stderr
    report = json.loads(done.stdout)
    assert report["healthy"] is (done.returncode == 0)
    return report["healthy"], [(f["level"], f["message"]) for f in report["findings"] if f["check"] == check]


def test_healthy_then_nvcfs_resource_violation_and_hierarchy_texts(control_plane: ControlPlane, kai: Kai) -> None:
    cp = control_plane
    cp.apply(*HEALTHY_QUEUES)
    wait_until("kai all to be ready", lambda: kai.probe("/readyz")[0] == 200)
    table = doctor(cp.kubeconfig_path, "--nvcf", f"--probe=127.0.0.1:{kai.probe_port}")
    assert table.returncode == 0, table.stdout + table.stderr
    assert "default-queue is a child of default-parent-queue with quota, limit and overQuotaWeight -1/-1/1" in (
        table.stdout
    )
    assert f"http://127.0.0.1:{kai.probe_port}/readyz?verbose: ready" in table.stdout
    assert table.stdout.strip().splitlines()[-1].startswith("healthy: 0 errors")
    try:
        cp.kubectl("patch", "queue", "default-queue", "--type=merge", "-p",
                   '{"spec":{"resources":{"gpu":{"quota":4,"limit":8}}}}')  # fmt: skip
        broken = doctor(cp.kubeconfig_path, "--nvcf", f"--probe=127.0.0.1:{kai.probe_port}")
        assert broken.returncode == 1
        assert "GPU resource violation for queue default-queue" in broken.stdout
        assert broken.stdout.strip().splitlines()[-1].startswith("unhealthy: 1 errors")
        assert findings(cp, kai, "default-queues") == (False, [(
            "error", "GPU resource violation for queue default-queue: expected limit=-1, quota=-1, overQuotaWeight=1, "
            "got limit=8, quota=4, overQuotaWeight=1"
        )])  # fmt: skip
        cp.kubectl("patch", "queue", "default-queue", "--type=merge", "-p", '{"spec":{"parentQueue":null}}')
        assert findings(cp, kai, "default-queues") == (False, [(
            "error", "Queue hierarchy misconfigured: default-queue has parentQueue '(none)', expected "
            "default-parent-queue. Correct parentName and childName in the defaultQueue values"
        )])  # fmt: skip
        cp.kubectl("delete", "queue", "default-parent-queue")
        healthy, found = findings(cp, kai, "default-queues")
        assert not healthy and found == [("error", "Queues default-parent-queue and default-queue are expected: "
            "either one or both were not found (missing: default-parent-queue). Apply the defaultQueue values "
            "(createDefaultQueue: true)")]  # fmt: skip
    finally:
        cp.apply(*HEALTHY_QUEUES)
    assert findings(cp, kai, "default-queues")[0] is True


def test_the_webhooks_are_called_as_the_api_server_calls_them(
    control_plane: ControlPlane, kai: Kai, admission: Admission
) -> None:
    cp = control_plane
    cp.apply(*HEALTHY_QUEUES)
    wait_until("kai all to be ready", lambda: kai.probe("/readyz")[0] == 200)
    expected = sorted(f"{w.configuration}/{w.name.format(namespace=webhooks.DEFAULT_NAMESPACE)}"
                      for w in webhooks.WEBHOOKS)  # fmt: skip
    assert findings(cp, kai, "webhooks") == (True, [("ok", f"webhook {name} answers") for name in expected])
    admission.stop()
    healthy, found = findings(cp, kai, "webhooks")
    assert not healthy and [level for level, _ in found] == ["error"] * len(expected)
    assert all(
        f"webhook {name} does not answer: " in message for name, (_, message) in zip(expected, found, strict=True)
    )
    assert "Connection refused" in found[0][1]


def test_a_refused_read_is_its_checks_error(control_plane: ControlPlane, tmp_path: Path) -> None:
    cp = control_plane
    role = "kai-e2e-doctor-crds-only"
    cp.apply({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": {"name": role},
              "rules": [{"apiGroups": ["apiextensions.k8s.io"], "resources": ["customresourcedefinitions"],
                         "verbs": ["get", "list"]}]})  # fmt: skip
    kubeconfig = cp.service_account_kubeconfig("kai-e2e-doctor", "doctor", role, tmp_path / "kubeconfig")
    done = doctor(kubeconfig, "-o", "json")
    assert done.returncode == 1 and not done.stderr, done.stderr
    report = json.loads(done.stdout)
    refused = {f["check"]: f["message"] for f in report["findings"] if f["level"] == "error"}
    assert sorted(refused) == ["components", "default-queues", "metrics", "pending", "webhooks"]
    assert refused["default-queues"].startswith("cannot read: GET /apis/scheduling.run.ai/v2/queues: 403 Forbidden: ")
    assert "system:serviceaccount:kai-e2e-doctor:doctor" in refused["default-queues"]


def test_no_cluster_to_examine_is_one_line_and_exit_2(tmp_path: Path) -> None:
    nowhere, port = tmp_path / "kubeconfig", free_port()
    nowhere.write_text(json.dumps({
        "apiVersion": "v1", "kind": "Config", "current-context": "x",
        "clusters": [{"name": "c", "cluster": {"server": f"https://127.0.0.1:{port}"}}],
        "users": [{"name": "u", "user": {"token": "t"}}],
        "contexts": [{"name": "x", "context": {"cluster": "c", "user": "u"}}],
    }))  # fmt: skip
    down = doctor(nowhere)
    assert (down.returncode, down.stdout) == (2, "")
    assert down.stderr.splitlines() == [
        f"Error: the API server https://127.0.0.1:{port} does not answer: ConnectError: Cannot connect to host "
        f"127.0.0.1:{port} ssl:default [Connect call failed ('127.0.0.1', {port})]"
    ]
    broken = tmp_path / "broken"
    broken.write_text("clusters: []\n")
    unusable = doctor(broken)
    assert unusable.returncode == 2 and len(unusable.stderr.splitlines()) == 1, unusable.stderr
    assert unusable.stderr.startswith(f"Error: kubeconfig {broken}: ")
