"""``kai admission``: the webhook server, its probes and metrics, and the Queue cache, until SIGTERM.

Each path of ``webhooks.WEBHOOKS`` is answered by its pure decision; the server only parses the AdmissionReview,
calls it and writes the answer. ``/readyz`` passes once a serving certificate is loaded and the queues are listed;
``/healthz`` while the accept loop runs.
"""

import logging
import secrets
import signal
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Histogram

from kai.cluster.kube import resources as api
from kai.cluster.kube.client import KubeCluster
from kai.cluster.kube.errors import NotFound
from kai.cluster.kube.kubeconfig import KubeconfigError
from kai.cluster.kube.ratelimit import UNLIMITED, RateLimit
from kai.cluster.port import ClusterError
from kai.components.admission import webhooks
from kai.components.admission.pod_mutation import mutate_pod
from kai.components.admission.pod_resize_validation import Lookup, validate_pod_resize
from kai.components.admission.pod_validation import validate_pod
from kai.components.admission.podgroup_validation import validate_podgroup
from kai.components.admission.queue_validation import validate_queue
from kai.components.admission.queues import QueueCache
from kai.components.admission.review import BadReview, Decision, Request, parse_request, response
from kai.components.admission.server import BadRequest, CertificateFiles, Handler, WebhookServer
from kai.components.admission.settings import AdmissionSettings
from kai.components.admission.topology_validation import validate_topology
from kai.components.shared.components import COMPONENTS
from kai.components.shared.endpoints import EndpointError, Endpoints, Health, parse_address
from kai.components.shared.metrics import RestClientMetrics

log = logging.getLogger(__name__)
DEFAULT_CERT_DIR = Path("/tmp/k8s-webhook-server/serving-certs")
"""controller-runtime's default, where KAI's admission Deployment mounts its certificate Secret."""
TOKEN_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"
"""The letters k8s.io/apimachinery's rand.String draws from (KAI's GPU-sharing ConfigMap names)."""


class AdmissionError(RuntimeError):
    """A setting or address that cannot be used; the message names the flag."""


@dataclass
class AdmissionOptions:
    settings: AdmissionSettings = field(default_factory=AdmissionSettings)
    webhook_address: str = f":{webhooks.WEBHOOK_PORT}"
    cert_dir: Path = DEFAULT_CERT_DIR
    metrics_bind_address: str = ":8080"
    health_probe_bind_address: str = ":8081"
    grace_s: float = 25.0
    rate_limit: RateLimit = UNLIMITED
    """Its API requests' client-side limit (KAI's ``--qps`` / ``--burst``)."""


def token() -> str:
    return "".join(secrets.choice(TOKEN_ALPHABET) for _ in range(7))


def decisions(
    settings: AdmissionSettings, queues: QueueCache, lookup: Lookup = lambda _kind, _key: None
) -> dict[str, Callable[[Request], Decision]]:
    """Each webhook path's decision; ``lookup`` reads an object from the API server (the pods/resize webhook's
    PodGroups, queues and priority classes)."""

    def queue(request: Request) -> Decision:
        parent = str((request.object.get("spec") or {}).get("parentQueue") or "")
        known, invalid = queues.view(parent)
        return validate_queue(request, known, invalid, settings)

    return {
        webhooks.MUTATE_POD: lambda request: mutate_pod(request, settings, token(), queues.view("")[0]),
        webhooks.VALIDATE_POD: lambda request: validate_pod(request, settings),
        webhooks.VALIDATE_POD_RESIZE: lambda request: validate_pod_resize(request, settings, lookup),
        webhooks.VALIDATE_QUEUE: queue,
        webhooks.VALIDATE_PODGROUP: lambda request: validate_podgroup(request, settings),
        webhooks.VALIDATE_TOPOLOGY: validate_topology,
    }


class _Metrics:
    def __init__(self, registry: CollectorRegistry) -> None:
        self.requests = Counter(
            "admission_requests", "Admission requests answered", ("webhook", "allowed"), namespace="kai",
            registry=registry,
        )  # fmt: skip
        self.latency = Histogram(
            "admission_request_duration_seconds", "Time to decide an admission request", ("webhook",),
            namespace="kai", registry=registry, buckets=(0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.1, 0.5),
        )  # fmt: skip


def handlers(
    choose: Mapping[str, Callable[[Request], Decision]], metrics: _Metrics | None = None
) -> dict[str, Handler]:
    """The server's handlers: AdmissionReview bytes in, AdmissionReview bytes out."""

    def handler(path: str, decide: Callable[[Request], Decision]) -> Handler:
        def answer(body: bytes) -> bytes:
            started = time.perf_counter()
            try:
                request = parse_request(body)
            except BadReview as error:
                raise BadRequest(str(error)) from error
            try:
                decision = decide(request)
            except Exception:  # a kai bug must not block the cluster's writes with a 500: refuse, saying so
                log.exception("%s failed on %s %s/%s", path, request.kind, request.namespace, request.name)
                decision = Decision(False, f"kai admission failed on this object ({path}); see its log", code=500)
            if not decision.allowed:
                log.info("%s refused %s %s/%s: %s", path, request.operation, request.namespace, request.name,
                         decision.message)  # fmt: skip
            if metrics is not None:
                metrics.requests.labels(path, str(decision.allowed).lower()).inc()
                metrics.latency.labels(path).observe(time.perf_counter() - started)
            return response(request.uid, decision)

        return answer

    return {path: handler(path, decide) for path, decide in choose.items()}


def _webhook_address(text: str) -> tuple[str, int]:
    """``--webhook-addr``: a port as KAI's operator passes it (``9443``), or ``HOST:PORT``."""
    try:
        address = parse_address(f":{text}" if text.isdigit() else text, "--webhook-addr")
    except EndpointError as error:
        raise AdmissionError(str(error)) from error
    if address is None:
        raise AdmissionError("--webhook-addr: the webhooks need a port (e.g. 9443 or 127.0.0.1:9443)")
    return address


def serve_admission(options: AdmissionOptions, kubeconfig: str | None, context: str | None) -> None:
    stop = threading.Event()
    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, lambda *_: stop.set())
    address = _webhook_address(options.webhook_address)
    try:
        cluster = KubeCluster.from_kubeconfig(
            kubeconfig,
            context=context,
            kinds=list(COMPONENTS["admission"].watches),
            component="kai-admission",
            rate_limit=options.rate_limit,
        )
    except KubeconfigError as error:
        raise AdmissionError(str(error)) from error

    def read_queue(name: str) -> Mapping[str, Any] | None:
        try:
            return cluster.send(api.get_request(api.kind_of("Queue"), name))
        except NotFound:
            return None

    def read(kind: str, key: str) -> Mapping[str, Any] | None:
        """Best effort: an object that cannot be read is None (the pods/resize webhook then admits)."""
        try:
            return cluster.send(api.get_request(api.kind_of(kind), key))
        except ClusterError as error:
            if not isinstance(error, NotFound):
                log.warning("cannot read %s %s: %s", kind, key, error)
            return None

    queues = QueueCache(read_queue)
    cluster.subscribe(queues.on_change)
    certificates = CertificateFiles(options.cert_dir)
    registry, health = CollectorRegistry(), Health()
    registry.register(RestClientMetrics(cluster.request_counts, cluster.server, cluster.rate_limit_waits))
    try:
        server = WebhookServer(
            address, certificates, handlers(decisions(options.settings, queues, read), _Metrics(registry))
        )
    except OSError as error:
        cluster.close()
        raise AdmissionError(
            f"cannot serve webhooks on {address[0]}:{address[1]}: {error.strerror or error}"
        ) from error
    health.liveness["webhooks"] = server.check
    health.readiness["certificate"] = certificates.check
    health.readiness["queues"] = lambda: (
        (True, "Queues listed") if cluster.informers["Queue"].synced.is_set() else (False, "listing Queues")
    )
    try:
        endpoints = Endpoints(options.metrics_bind_address, options.health_probe_bind_address, registry, health)
    except EndpointError:
        server.stop(0)
        cluster.close()
        raise
    try:
        cluster.start()
        server.start()
        log.info("webhooks on %s:%d (certificate from %s)", address[0], server.port, options.cert_dir)
        stop.wait()
    finally:
        cut = server.stop(options.grace_s)
        log.info("webhooks stopped%s", f" ({cut} requests cut at the deadline)" if cut else "")
        endpoints.close()
        cluster.close()
