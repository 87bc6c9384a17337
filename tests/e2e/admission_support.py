"""`kai admission` for e2e tests: the server as a process with its own CA and serving certificate, registered with
the webhook configurations kai's contract renders (a URL instead of the Service), and kubectl helpers to see what
the cluster refuses."""

from __future__ import annotations

import base64
import shutil
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml
from controlplane import REPO, ControlPlane, free_port, make_pki
from kai_support import Kai, wait_until

from kai.components.admission import webhooks


@dataclass
class Admission:
    cp: ControlPlane
    workdir: Path
    cert_dir: Path
    port: int
    probe_port: int
    log: Path
    process: subprocess.Popen[bytes] | None = None
    extra: tuple[str, ...] = ()
    """More flags for ``kai admission``."""

    def start(self) -> None:
        argv = [
            sys.executable, "-m", "kai", "admission", f"--kubeconfig={self.cp.kubeconfig_path}",
            f"--webhook-addr=127.0.0.1:{self.port}", f"--cert-dir={self.cert_dir}", "--metrics-bind-address=0",
            f"--health-probe-bind-address=127.0.0.1:{self.probe_port}", "--gpu-sharing-enabled",
            "--gpu-fraction-runtime-class-name=", *self.extra,
        ]  # fmt: skip
        with self.log.open("ab") as out:
            self.process = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT, cwd=REPO)
        wait_until("kai admission to be ready", lambda: Kai.get(self.probe_port, "/readyz")[0] == 200)

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            self.process.wait(timeout=40)

    def new_certificate(self, name: str) -> str:
        """A new CA and serving certificate for 127.0.0.1 in the cert dir (as a rotated Secret); the CA, base64."""
        (self.workdir / name).mkdir()
        pki = make_pki(self.workdir / name)
        shutil.copy(pki["server_key"], self.cert_dir / "tls.key.new")
        shutil.copy(pki["server_cert"], self.cert_dir / "tls.crt")
        (self.cert_dir / "tls.key.new").rename(self.cert_dir / "tls.key")
        return base64.b64encode(pki["ca"].read_bytes()).decode()

    def register(self, ca_bundle: str) -> None:
        client = webhooks.url_client(f"https://127.0.0.1:{self.port}", ca_bundle)
        self.cp.apply(*webhooks.configurations(client))


@contextmanager
def serving(cp: ControlPlane, tmp_path: Path, *extra: str) -> Iterator[Admission]:
    """`kai admission` (with ``extra`` flags) serving the webhooks, registered for the block and removed after it (the
    cluster is shared)."""
    cert_dir = tmp_path / "certs"
    cert_dir.mkdir()
    server = Admission(cp, tmp_path, cert_dir, free_port(), free_port(), tmp_path / "admission.log", extra=extra)
    ca = server.new_certificate("pki-1")
    server.start()
    server.register(ca)
    try:
        wait_until("the API server to call the queue webhook", lambda: kai_refuses(cp))
        yield server
    finally:
        for kind, name in CONFIGURATIONS:
            cp.kubectl("delete", kind, name, "--ignore-not-found")
        server.stop()
        if server.process is not None and server.process.returncode not in (0, None):
            print(server.log.read_text())


CONFIGURATIONS = tuple((kind.lower(), name) for name, kind in webhooks.CONFIGURATIONS.items())


PROBE = "resources must be specified"
"""What only the queue webhook answers for a Queue without resources (the CRD's schema, as KAI's, accepts it)."""


def kai_refuses(cp: ControlPlane) -> str:
    probe = {"apiVersion": "scheduling.run.ai/v2", "kind": "Queue", "metadata": {"name": "probe"}, "spec": {}}
    return PROBE if PROBE in refused(cp, probe, "--dry-run=server") else ""


def kubectl_apply(cp: ControlPlane, document: dict[str, Any], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(cp.kubectl_path), f"--kubeconfig={cp.kubeconfig_path}", "apply", *args, "-f", "-"],
        input=yaml.safe_dump(document), capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip


def refused(cp: ControlPlane, document: dict[str, Any], *args: str) -> str:
    """kubectl's error for an object the cluster refuses ("" when it was accepted)."""
    done = kubectl_apply(cp, document, *args)
    return done.stderr if done.returncode else ""


UNLIMITED = {"quota": -1, "limit": -1, "overQuotaWeight": 1}


def queue(name: str, parent: str = "", gpu: dict[str, float] | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {"resources": {"gpu": gpu or UNLIMITED, "cpu": UNLIMITED, "memory": UNLIMITED}}
    if parent:
        spec["parentQueue"] = parent
    return {"apiVersion": "scheduling.run.ai/v2", "kind": "Queue", "metadata": {"name": name}, "spec": spec}
