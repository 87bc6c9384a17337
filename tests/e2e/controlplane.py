"""A real Kubernetes control plane for tests, envtest style: etcd + kube-apiserver on loopback ports.

No kubelet and no controller-manager: nothing runs pods, namespaces never finish terminating and there is no garbage
collection, so tests create what they need under unique names. Binaries come from hack/controlplane.sh
($KUBEBUILDER_ASSETS, else built once from the Go module proxy and cached under ~/.cache/kai/controlplane/).

Authentication is a static bearer token (user kai-admin in system:masters), authorization RBAC, TLS with a CA made
at start, the ServiceAccount admission plugin disabled (no controller creates default service accounts) and a
service-account signing key made at start — the flags controller-runtime's envtest uses, token auth instead of
client certificates. The API server's cluster traffic (webhook calls to Services) goes through servicenet's proxy.
"""

from __future__ import annotations

import base64
import contextlib
import ctypes
import datetime as dt
import functools
import ipaddress
import json
import os
import random
import secrets
import signal
import socket
import ssl
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID
from servicenet import ServiceNetwork

REPO = Path(__file__).resolve().parents[2]
CONTROLPLANE_SCRIPT = REPO / "hack" / "controlplane.sh"
CRD_DIR = REPO / "deploy" / "crds"

ADMIN_USER = "kai-admin"
START_TIMEOUT_S = 120.0
STOP_TIMEOUT_S = 20.0


class ControlPlaneError(RuntimeError):
    """The control plane could not be provided or started; the message says why."""


# ------------------------------------------------------------------------------------------- binaries


def provided_directory(script: Path, *args: str) -> Path:
    """Runs a provider script (hack/controlplane.sh, hack/testcluster.sh), which builds what is missing once, and
    returns the directory it printed last; its failure becomes a ControlPlaneError with the end of its log."""
    try:
        proc = subprocess.run(["bash", str(script), *args], capture_output=True, text=True, check=False)
    except OSError as e:
        raise ControlPlaneError(f"cannot run {script}: {e}") from e
    if proc.returncode != 0:
        tail = "\n".join(proc.stderr.strip().splitlines()[-40:])
        raise ControlPlaneError(f"{script} {' '.join(args)} failed with exit status {proc.returncode}:\n{tail}")
    lines = proc.stdout.strip().splitlines()
    if not lines:
        raise ControlPlaneError(f"{script} printed no directory")
    return Path(lines[-1])


def find_binaries(script: Path = CONTROLPLANE_SCRIPT) -> Path:
    """The directory holding kube-apiserver, etcd (and kubectl): runs hack/controlplane.sh, which builds them once."""
    bin_dir = provided_directory(script)
    for name in ("kube-apiserver", "etcd"):
        if not os.access(bin_dir / name, os.X_OK):
            raise ControlPlaneError(f"{script} named {bin_dir}, which has no executable {name}")
    return bin_dir


# ------------------------------------------------------------------------------------------- keys


def _write_pem(path: Path, data: bytes) -> Path:
    path.write_bytes(data)
    path.chmod(0o600)
    return path


def _key_pem(key: ec.EllipticCurvePrivateKey) -> bytes:
    return key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )


def make_pki(directory: Path) -> dict[str, Path]:
    """A CA, a serving certificate for 127.0.0.1/localhost signed by it, and a service-account signing key pair."""
    now = dt.datetime.now(dt.UTC)
    not_before, not_after = now - dt.timedelta(hours=1), now + dt.timedelta(days=7)

    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "kai-e2e-ca")])
    ca_cert = (
        x509.CertificateBuilder()
        .subject_name(ca_name)
        .issuer_name(ca_name)
        .public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(not_before)
        .not_valid_after(not_after)
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True,
                content_commitment=False,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=False,
                key_cert_sign=True,
                crl_sign=True,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(ca_key.public_key()), critical=False)
        .sign(ca_key, hashes.SHA256())
    )

    server_key = ec.generate_private_key(ec.SECP256R1())
    server_cert = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "kube-apiserver")]))
        .issuer_name(ca_name)
        .public_key(server_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(not_before)
        .not_valid_after(not_after)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(
            x509.SubjectAlternativeName([x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
            critical=False,
        )
        .add_extension(x509.ExtendedKeyUsage([x509.oid.ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()), critical=False)
        .sign(ca_key, hashes.SHA256())
    )

    sa_key = ec.generate_private_key(ec.SECP256R1())
    sa_pub = sa_key.public_key().public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
    )
    return {
        "ca": _write_pem(directory / "ca.crt", ca_cert.public_bytes(serialization.Encoding.PEM)),
        "server_cert": _write_pem(directory / "apiserver.crt", server_cert.public_bytes(serialization.Encoding.PEM)),
        "server_key": _write_pem(directory / "apiserver.key", _key_pem(server_key)),
        "sa_key": _write_pem(directory / "sa-signer.key", _key_pem(sa_key)),
        "sa_pub": _write_pem(directory / "sa-signer.pub", sa_pub),
    }


# ------------------------------------------------------------------------------------------- processes


def free_port() -> int:
    """A port nothing listens on, for a server this run starts, never handed out before in this run.

    The kernel's ``bind(0)`` hands the same port out again once it is closed (so two servers started together got
    one port), and draws from the ephemeral range, where any outgoing connection may take the port before its
    server binds it: a component then died with "Address already in use". So ports come from below that range."""
    low, _ = (int(bound) for bound in Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split())
    ports = range(_FIRST_PORT, low) if low - _FIRST_PORT >= 1_000 else range(_FIRST_PORT, 65_536)
    for _ in range(1_000):
        port = _PORT_DRAW.choice(ports)
        if port in _HANDED_OUT:
            continue
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
        _HANDED_OUT.add(port)
        return port
    raise RuntimeError(f"no free port in {ports.start}..{ports.stop - 1} after 1,000 tries")


_FIRST_PORT = 10_000
_HANDED_OUT: set[int] = set()
_PORT_DRAW = random.Random()


def _die_with_parent() -> None:  # runs in the child between fork and exec
    with contextlib.suppress(Exception):
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG


@dataclass
class Proc:
    name: str
    popen: subprocess.Popen[bytes]
    log: Path

    def tail(self, lines: int = 30) -> str:
        try:
            text = self.log.read_text(errors="replace")
        except OSError:
            return "(no log)"
        return "\n".join(text.strip().splitlines()[-lines:])

    def check_alive(self) -> None:
        code = self.popen.poll()
        if code is not None:
            raise ControlPlaneError(f"{self.name} exited with status {code}; last lines of {self.log}:\n{self.tail()}")

    def stop(self, timeout: float = STOP_TIMEOUT_S) -> None:
        if self.popen.poll() is not None:
            return
        self.popen.terminate()
        try:
            self.popen.wait(timeout)
        except subprocess.TimeoutExpired:
            self.popen.kill()
            self.popen.wait(timeout)


def spawn(name: str, argv: list[str], log: Path, env: dict[str, str] | None = None) -> Proc:
    """Starts `argv` with its output in `log`; `env` is added to this process's environment."""
    with log.open("wb") as out:
        popen = subprocess.Popen(
            argv,
            stdin=subprocess.DEVNULL,
            env=None if env is None else {**os.environ, **env},
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # a Ctrl-C reaches pytest, which stops us in order
            preexec_fn=_die_with_parent,  # and a killed pytest does not leave us behind
        )
    return Proc(name, popen, log)


def poll_until(what: str, check: Callable[[], bool], timeout: float, alive: Iterable[Proc] = ()) -> None:
    """Calls check() until it returns True; fails with `what` after `timeout` seconds or if a process died."""
    deadline = time.monotonic() + timeout
    delay = 0.02
    while True:
        for proc in alive:
            proc.check_alive()
        if check():
            return
        if time.monotonic() > deadline:
            details = "".join(f"\n--- {p.name} ({p.log}):\n{p.tail()}" for p in alive)
            raise ControlPlaneError(f"timed out after {timeout:.0f}s waiting for {what}{details}")
        time.sleep(delay)
        delay = min(delay * 1.5, 0.25)


# ------------------------------------------------------------------------------------------- control plane


@dataclass
class ControlPlane:
    """A running etcd + kube-apiserver. `kubeconfig_path`, `server_url` and `token` are what clients need."""

    bin_dir: Path
    workdir: Path
    server_url: str
    token: str
    ca_file: Path
    kubeconfig_path: Path
    etcd_url: str
    network: ServiceNetwork = field(repr=False)
    """How the API server reaches Services (webhooks): ``network.route(...)`` (servicenet.py)."""
    _procs: list[Proc] = field(default_factory=list, repr=False)

    @property
    def processes(self) -> list[Proc]:
        """etcd and kube-apiserver: waits on other parts fail early, with their logs, if one of them died."""
        return list(self._procs)

    @property
    def kubectl_path(self) -> Path:
        return self.bin_dir / "kubectl"

    def ssl_context(self) -> ssl.SSLContext:
        return ssl.create_default_context(cafile=str(self.ca_file))

    def request(
        self, path: str, method: str = "GET", body: Any = None, content_type: str = "application/json"
    ) -> tuple[int, Any]:
        """A raw authenticated request (status, decoded JSON or text) — for probing the server itself."""
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(self.server_url + path, data=data, method=method)
        req.add_header("Authorization", f"Bearer {self.token}")
        if data is not None:
            req.add_header("Content-Type", content_type)
        try:
            with urllib.request.urlopen(req, context=self.ssl_context(), timeout=10) as resp:
                status, raw = resp.status, resp.read()
        except urllib.error.HTTPError as e:
            status, raw = e.code, e.read()
        try:
            return status, json.loads(raw)
        except ValueError:
            return status, raw.decode(errors="replace")

    def kubectl(self, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        if not os.access(self.kubectl_path, os.X_OK):
            raise ControlPlaneError(f"no kubectl in {self.bin_dir}")
        argv = [str(self.kubectl_path), f"--kubeconfig={self.kubeconfig_path}", *args]
        proc = subprocess.run(argv, capture_output=True, text=True, timeout=60, check=False)
        if check and proc.returncode != 0:
            raise AssertionError(f"{' '.join(argv)} failed ({proc.returncode}):\n{proc.stderr}")
        return proc

    def clear_namespace(self, name: str) -> None:
        """Deletes the namespace, then what a later test's scheduler would still see in it, without waiting for a
        kubelet: its pods (grace period 0), PodGroups and BindRequests. A namespace being deleted takes no new pods,
        so no controller puts them back; the namespace controller, where it runs, finishes the rest."""
        self.kubectl("delete", "namespace", name, "--wait=false", "--ignore-not-found", check=False)
        self.kubectl("delete", "pods", "--all", "-n", name, "--grace-period=0", "--force", "--wait=false", check=False)
        self.kubectl("delete", "podgroups,bindrequests", "--all", "-n", name, "--wait=false", check=False)

    def apply(self, *documents: dict[str, Any]) -> None:
        """Creates or updates objects as the admin (server-side apply, as `kubectl apply --server-side` would)."""
        path = self.workdir / f"apply-{secrets.token_hex(4)}.yaml"
        path.write_text(yaml.safe_dump_all(documents))
        self.kubectl("apply", "--server-side", "--force-conflicts", "--field-manager=kai-e2e", "-f", str(path))

    def service_account_kubeconfig(self, namespace: str, name: str, cluster_role: str, path: Path) -> Path:
        """A kubeconfig for ServiceAccount `namespace/name` bound to `cluster_role`: the identity a component has when
        it runs in a pod. The token comes from the TokenRequest API, as the kubelet would get it."""
        self.apply(
            {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}},
            {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": name, "namespace": namespace}},
            {
                "apiVersion": "rbac.authorization.k8s.io/v1",
                "kind": "ClusterRoleBinding",
                "metadata": {"name": f"{namespace}:{name}"},
                "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": cluster_role},
                "subjects": [{"kind": "ServiceAccount", "name": name, "namespace": namespace}],
            },
        )
        return self.token_kubeconfig(namespace, name, path)

    def token_kubeconfig(self, namespace: str, name: str, path: Path) -> Path:
        """A kubeconfig with a TokenRequest token of the existing ServiceAccount `namespace/name` (what the kubelet
        mounts into that account's pods)."""
        request = {
            "apiVersion": "authentication.k8s.io/v1",
            "kind": "TokenRequest",
            "spec": {"expirationSeconds": 86400},
        }
        status, body = self.request(f"/api/v1/namespaces/{namespace}/serviceaccounts/{name}/token", "POST", request)
        if status != 201:
            raise ControlPlaneError(f"no token for ServiceAccount {namespace}/{name} ({status}): {body}")
        user = f"system:serviceaccount:{namespace}:{name}"
        write_kubeconfig(path, self.server_url, self.ca_file, body["status"]["token"], user)
        return path

    # ---------------------------------------------------------------------------------- faults (drills)
    # The same binary, flags, ports and data directory as at start, so every client (kai, KWOK, the controllers)
    # reconnects to the same address and finds the same objects. A restarted process logs to the same path; the
    # previous log is kept beside it as <log>.<n>.

    def _proc(self, name: str) -> Proc:
        return next(p for p in self._procs if p.name == name)

    def _respawn(self, name: str) -> Proc:
        old = self._proc(name)
        if old.popen.poll() is None:
            raise ControlPlaneError(f"{name} is still running")
        kept = 1
        while old.log.with_name(f"{old.log.name}.{kept}").exists():
            kept += 1
        old.log.rename(old.log.with_name(f"{old.log.name}.{kept}"))
        new = spawn(name, [str(arg) for arg in old.popen.args], old.log)
        self._procs[self._procs.index(old)] = new
        return new

    def _stop_proc(self, name: str, kill: bool) -> None:
        proc = self._proc(name)
        if kill and proc.popen.poll() is None:
            proc.popen.kill()
            proc.popen.wait(STOP_TIMEOUT_S)
        proc.stop()

    def stop_apiserver(self, kill: bool = False) -> None:
        """Stops kube-apiserver (SIGTERM, its graceful shutdown; ``kill``: SIGKILL, a crash). etcd keeps running."""
        self._stop_proc("kube-apiserver", kill)

    def start_apiserver(self, timeout: float = START_TIMEOUT_S) -> None:
        """Starts the stopped kube-apiserver again and waits until its /readyz is ok."""
        self._respawn("kube-apiserver")
        self.wait_ready(timeout)

    def restart_apiserver(self, kill: bool = False, timeout: float = START_TIMEOUT_S) -> None:
        self.stop_apiserver(kill)
        self.start_apiserver(timeout)

    def stop_etcd(self, kill: bool = False) -> None:
        """Stops etcd (SIGTERM; ``kill``: SIGKILL). kube-apiserver keeps running and answers with errors, or from its
        watch cache, until etcd is back."""
        self._stop_proc("etcd", kill)

    def start_etcd(self, timeout: float = START_TIMEOUT_S) -> None:
        """Starts the stopped etcd again on its data directory and waits until kube-apiserver is ready again."""
        etcd = self._respawn("etcd")
        poll_until(
            f"etcd health at {self.etcd_url}",
            lambda: http_ready(f"{self.etcd_url}/health", None, None, lambda b: b'"health":"true"' in b),
            timeout,
            [etcd],
        )
        self.wait_ready(timeout)

    def compact_etcd(self) -> int:
        """Compacts etcd's history up to its current revision (etcd's JSON gateway): a watch or list resumed from
        any older resourceVersion then gets 410 Gone / Expired. Returns that revision."""

        def call(path: str, body: dict[str, Any]) -> dict[str, Any]:
            req = urllib.request.Request(f"{self.etcd_url}{path}", json.dumps(body).encode(), method="POST")
            with urllib.request.urlopen(req, timeout=10) as resp:
                return dict(json.loads(resp.read()))

        revision = int(call("/v3/kv/range", {"key": base64.b64encode(b"/").decode()})["header"]["revision"])
        call("/v3/kv/compaction", {"revision": str(revision), "physical": True})
        return revision

    def heal(self, timeout: float = START_TIMEOUT_S) -> None:
        """Starts etcd and kube-apiserver again where a drill left one stopped, then waits until the API server is
        ready: the tests after a drill share this control plane."""
        for name in ("etcd", "kube-apiserver"):
            if self._proc(name).popen.poll() is not None:
                self._respawn(name)
        self.wait_ready(timeout)

    def ready(self) -> bool:
        """kube-apiserver's /readyz is ok (its etcd check included)."""
        return http_ready(f"{self.server_url}/readyz", self.ssl_context(), self.token, lambda b: b.strip() == b"ok")

    def wait_ready(self, timeout: float = START_TIMEOUT_S) -> None:
        """Waits until kube-apiserver's /readyz is ok; fails early, with the logs, if etcd or it died."""
        poll_until(f"kube-apiserver /readyz at {self.server_url}", self.ready, timeout, self._procs)

    def stop(self) -> None:
        """Stops kube-apiserver, then etcd (reverse start order). Safe to call twice."""
        for proc in reversed(self._procs):
            proc.stop()
        self.network.stop()

    def __enter__(self) -> ControlPlane:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def http_ready(url: str, context: ssl.SSLContext | None, token: str | None, expect: Callable[[bytes], bool]) -> bool:
    req = urllib.request.Request(url)
    if token:
        req.add_header("Authorization", f"Bearer {token}")
    try:
        with urllib.request.urlopen(req, context=context, timeout=5) as resp:
            return resp.status == 200 and expect(resp.read())
    except (urllib.error.URLError, OSError, ssl.SSLError):
        return False


def write_kubeconfig(path: Path, server_url: str, ca_file: Path, token: str, user: str = ADMIN_USER) -> None:
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [
            {
                "name": "kai-e2e",
                "cluster": {
                    "server": server_url,
                    "certificate-authority-data": base64.b64encode(ca_file.read_bytes()).decode(),
                },
            }
        ],
        "users": [{"name": user, "user": {"token": token}}],
        "contexts": [{"name": "kai-e2e", "context": {"cluster": "kai-e2e", "user": user, "namespace": "default"}}],
        "current-context": "kai-e2e",
    }
    path.write_text(yaml.safe_dump(config, sort_keys=False))
    path.chmod(0o600)


def start(
    bin_dir: Path, workdir: Path, timeout: float = START_TIMEOUT_S, apiserver_args: Sequence[str] = ()
) -> ControlPlane:
    """Starts etcd and kube-apiserver (with `apiserver_args` besides its own) under `workdir` and waits for /readyz.
    Retries once if a port was taken."""
    for attempt in range(3):
        try:
            return _start_once(bin_dir, workdir / f"attempt-{attempt}", timeout, apiserver_args)
        except ControlPlaneError as e:
            if "address already in use" not in str(e) or attempt == 2:
                raise
    raise AssertionError("unreachable")


def _start_once(bin_dir: Path, workdir: Path, timeout: float, apiserver_args: Sequence[str]) -> ControlPlane:
    workdir.mkdir(parents=True)
    pki = make_pki(workdir)
    token = secrets.token_hex(24)
    token_file = workdir / "tokens.csv"
    _write_pem(token_file, f'{token},{ADMIN_USER},{ADMIN_USER},"system:masters"\n'.encode())

    network = ServiceNetwork(workdir / "services.sock")
    etcd_port, peer_port, api_port = free_port(), free_port(), free_port()
    etcd_url = f"http://127.0.0.1:{etcd_port}"
    peer_url = f"http://127.0.0.1:{peer_port}"
    server_url = f"https://127.0.0.1:{api_port}"
    procs: list[Proc] = []
    try:
        etcd = spawn(
            "etcd",
            [
                str(bin_dir / "etcd"),
                "--name=default",
                f"--data-dir={workdir / 'etcd'}",
                f"--listen-client-urls={etcd_url}",
                f"--advertise-client-urls={etcd_url}",
                f"--listen-peer-urls={peer_url}",
                f"--initial-advertise-peer-urls={peer_url}",
                f"--initial-cluster=default={peer_url}",
                "--unsafe-no-fsync=true",
                "--log-level=warn",
            ],
            workdir / "etcd.log",
        )
        procs.append(etcd)
        poll_until(
            f"etcd health at {etcd_url}",
            lambda: http_ready(f"{etcd_url}/health", None, None, lambda b: b'"health":"true"' in b),
            timeout,
            procs,
        )
        apiserver = spawn(
            "kube-apiserver",
            [
                str(bin_dir / "kube-apiserver"),
                f"--etcd-servers={etcd_url}",
                "--bind-address=127.0.0.1",
                "--advertise-address=127.0.0.1",
                f"--secure-port={api_port}",
                f"--cert-dir={workdir / 'certs'}",
                f"--tls-cert-file={pki['server_cert']}",
                f"--tls-private-key-file={pki['server_key']}",
                f"--token-auth-file={token_file}",
                "--authorization-mode=RBAC",
                "--service-cluster-ip-range=10.96.0.0/16",
                "--allow-privileged=true",
                "--disable-admission-plugins=ServiceAccount",
                f"--service-account-issuer={server_url}/",
                f"--service-account-key-file={pki['sa_pub']}",
                f"--service-account-signing-key-file={pki['sa_key']}",
                f"--egress-selector-config-file={network.egress_config(workdir / 'egress.yaml')}",
                *apiserver_args,
            ],
            workdir / "kube-apiserver.log",
        )
        procs.append(apiserver)
        context = ssl.create_default_context(cafile=str(pki["ca"]))
        poll_until(
            f"kube-apiserver /readyz at {server_url}",
            lambda: http_ready(f"{server_url}/readyz", context, token, lambda b: b.strip() == b"ok"),
            timeout,
            procs,
        )
    except BaseException:
        for proc in reversed(procs):
            proc.stop()
        network.stop()
        raise

    kubeconfig = workdir / "kubeconfig"
    write_kubeconfig(kubeconfig, server_url, pki["ca"], token)
    return ControlPlane(
        bin_dir=bin_dir,
        workdir=workdir,
        server_url=server_url,
        token=token,
        ca_file=pki["ca"],
        kubeconfig_path=kubeconfig,
        etcd_url=etcd_url,
        network=network,
        _procs=procs,
    )


def api_error_message(error: BaseException) -> str:
    """The API server's message carried by a lightkube ApiError (what kubectl would print)."""
    status = getattr(error, "status", None)
    return str(getattr(status, "message", None) or error)


# ------------------------------------------------------------------------------------------- CRDs


def install_crds(cp: ControlPlane, crd_dir: Path = CRD_DIR, timeout: float = 60.0) -> list[str]:
    """Creates every CRD in `crd_dir`'s YAML files and waits until each is Established and its resources are served.
    kubectl reads the files (operators' CRDs run to megabytes: too slow for PyYAML on a busy machine)."""
    paths = sorted(crd_dir.glob("*.yaml"))
    if not paths:
        raise ControlPlaneError(f"no CRDs in {crd_dir}")
    created = cp.kubectl("create", *(f"--filename={path}" for path in paths), "--output=name").stdout.split()
    names = [line.split("/", 1)[1] for line in created]
    for name in names:
        poll_until(f"CRD {name} Established", functools.partial(_established, cp, name), timeout, cp.processes)
    for name in names:
        spec = cp.request(f"/apis/apiextensions.k8s.io/v1/customresourcedefinitions/{name}")[1]["spec"]
        group, plural = spec["group"], spec["names"]["plural"]
        version = next(v["name"] for v in spec["versions"] if v["served"])
        poll_until(
            f"/apis/{group}/{version} to serve {plural}",
            functools.partial(_serves, cp, group, version, plural),
            timeout,
            cp.processes,
        )
    return names


def _established(cp: ControlPlane, name: str) -> bool:
    status, body = cp.request(f"/apis/apiextensions.k8s.io/v1/customresourcedefinitions/{name}")
    if status != 200:
        return False
    # A CRD just created has no status yet, or `conditions: null` until the apiserver's controllers get to it.
    conditions = (body.get("status") or {}).get("conditions") or []
    return any(c["type"] == "Established" and c["status"] == "True" for c in conditions)


def _serves(cp: ControlPlane, group: str, version: str, plural: str) -> bool:
    status, body = cp.request(f"/apis/{group}/{version}")
    return status == 200 and any(r.get("name") == plural for r in body.get("resources") or [])
