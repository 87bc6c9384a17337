"""Reading what the doctor's checks need from a cluster, and reaching the probes and webhooks it is told of."""

import base64
import json
import ssl
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from kai.cluster.kube import resources as api
from kai.cluster.kube.client import KubeCluster
from kai.cluster.kube.errors import ApiError, Unreachable
from kai.cluster.prometheus import UsageQueryError
from kai.components.admission import webhooks
from kai.components.doctor import checks
from kai.components.doctor.checks import ERROR, OK, WARNING, Finding
from kai.components.operator.known_prometheus import kai_namespace, known_prometheus
from kai.components.operator.settings import CONFIG_NAME
from kai.core.model import names
from kai.core.model.meta import Raw

PROBE_TIMEOUT_S = 5.0
OPERATOR = "kai-operator"
"""The chart's operator Deployment: it has no metrics Service, so no scrape target is expected of it."""
REVIEW_UID = "kai-doctor"


@dataclass(frozen=True, slots=True)
class DoctorOptions:
    namespace: str = webhooks.DEFAULT_NAMESPACE
    nvcf: bool = False
    """Also NVCA's -1/-1/1 rule for the default queues (NVCF clusters)."""
    pending_s: float = 300.0
    probes: tuple[str, ...] = ()
    prometheus: str = ""
    """URL of a Prometheus that scrapes kai (else the one the Config names, if any)."""


def examine(cluster: KubeCluster, options: DoctorOptions) -> list[Finding]:
    """Every check's findings. A read the API server refuses (RBAC, say) is that check's error; no answer at all
    (``Unreachable``) ends the examination for the caller to report in one line."""
    crds = _read("crds", lambda: checks.crds(c["metadata"]["name"] for c in cluster.list("CustomResourceDefinition")))
    if crds[0].level == checks.ERROR:
        return crds  # nothing else can be read
    return [
        *crds,
        *_read("default-queues", lambda: _queues(cluster, options)),
        *_read("components", lambda: _components(cluster, options)),
        *_read("webhooks", lambda: _webhooks(cluster)),
        *_read("metrics", lambda: _metrics(cluster, options)),
        *_read(
            "pending",
            lambda: checks.pending(cluster.list("Pod"), time.time(), options.pending_s, names.SCHEDULER_NAME),
        ),
    ]


def _queues(cluster: KubeCluster, options: DoctorOptions) -> list[Finding]:
    queues = {q["metadata"]["name"]: q for q in cluster.list("Queue")}
    return [
        *checks.nvca_queues(queues, options.nvcf),
        *checks.queue_tree(queues),
        *_read("capacity", lambda: checks.capacity(queues, cluster.list("Node"))),
    ]


def _read(check: str, run: Callable[[], list[Finding]]) -> list[Finding]:
    """``run``'s findings, or its refused read as the check's error."""
    try:
        return run()
    except Unreachable:
        raise
    except ApiError as error:
        return [Finding(check, checks.ERROR, f"cannot read: {error}")]


def _deployments(cluster: KubeCluster, namespace: str) -> list[Raw]:
    kind = api.kind_of("Deployment")
    listing = cluster.send(api.Request("GET", kind.collection_path(namespace))) or {}
    return list(listing.get("items") or [])


def _components(cluster: KubeCluster, options: DoctorOptions) -> list[Finding]:
    deployments = _deployments(cluster, options.namespace)
    found = checks.deployments(deployments, options.namespace) + checks.probes(_probe(url) for url in options.probes)
    if not found:
        return [Finding("components", checks.ERROR, f"no kai components found: no Deployment in namespace "
                        f"{options.namespace} and no --probe address of a local `kai all`")]  # fmt: skip
    return found


def _metrics(cluster: KubeCluster, options: DoctorOptions) -> list[Finding]:
    """``up`` of every kai component's scrape targets, in the Prometheus that ``--prometheus`` names, else the Config's
    ``externalPrometheusUrl``, else the one kai's operator made (reached through the API server's service proxy)."""
    namespace = kai_namespace(cluster.get("Config", CONFIG_NAME) or {}, options.namespace)
    query = f'up{{namespace="{namespace}"}}'
    prometheus = known_prometheus(cluster, options.prometheus, options.namespace, PROBE_TIMEOUT_S)
    if prometheus is None:
        return [Finding("metrics", OK, "no Prometheus known (--prometheus, or the Config's spec.prometheus): "
                        "scraping not checked")]  # fmt: skip
    try:
        up = prometheus.instant(query)
    except (UsageQueryError, ApiError) as error:
        return [Finding("metrics", ERROR, f"cannot ask {prometheus.where} whether kai is scraped: {error}")]
    components = [d["metadata"]["name"] for d in _deployments(cluster, namespace) if d["metadata"]["name"] != OPERATOR]
    if not components:
        return [Finding("metrics", WARNING, f"no kai component deployed in namespace {namespace}: nothing to look "
                        f"for in {prometheus.where}")]  # fmt: skip
    return checks.scraped(components, up, prometheus.where)


def _probe(address: str) -> tuple[str, int, str]:
    url = address if "://" in address else f"http://{address}"
    url = url.rstrip("/") + "/readyz?verbose"
    try:
        with urllib.request.urlopen(url, timeout=PROBE_TIMEOUT_S) as answer:
            return url, answer.status, answer.read().decode(errors="replace")
    except urllib.error.HTTPError as error:
        return url, error.code, error.read().decode(errors="replace")
    except (urllib.error.URLError, OSError) as error:
        return url, 0, str(getattr(error, "reason", error))


def _webhooks(cluster: KubeCluster) -> list[Finding]:
    expected = sorted(webhooks.CONFIGURATIONS)
    found: dict[str, Raw] = {}
    for kind in ("MutatingWebhookConfiguration", "ValidatingWebhookConfiguration"):
        found.update((c["metadata"]["name"], c) for c in cluster.list(kind) if c["metadata"]["name"] in expected)
    reached = {
        f"{name}/{hook.get('name')}": _reach(cluster, hook.get("clientConfig") or {})
        for name, configuration in found.items()
        for hook in configuration.get("webhooks") or []
    }
    return checks.webhook_configurations(found, expected, reached)


def _review() -> bytes:
    probe = {"metadata": {"name": REVIEW_UID, "namespace": "default"}, "spec": {"schedulerName": REVIEW_UID}}
    request = {"uid": REVIEW_UID, "kind": {"kind": "Pod"}, "operation": "CREATE", "object": probe}
    return json.dumps({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": request}).encode()


def _answered(body: Any) -> str:
    response = body.get("response") if isinstance(body, dict) else None
    if not isinstance(response, dict) or response.get("uid") != REVIEW_UID:
        return f"the answer is not an AdmissionReview for the request: {str(body)[:200]}"
    return ""


def _reach(cluster: KubeCluster, client_config: Raw) -> str:
    """ "" when the webhook answers an AdmissionReview (a harmless one: a pod of no scheduler), else why not. A URL
    is called directly and checked against the caBundle; a Service through the API server's service proxy."""
    service = client_config.get("service")
    if isinstance(service, dict):
        path = (f"/api/v1/namespaces/{service.get('namespace')}/services/https:{service.get('name')}:"
                f"{service.get('port', 443)}/proxy{service.get('path', '')}")  # fmt: skip
        try:
            body = cluster.send(api.Request("POST", path, body=json.loads(_review())))
        except ApiError as error:
            return str(error)
        return _answered(body)
    url = str(client_config.get("url") or "")
    if not url:
        return "its clientConfig has neither a service nor a url"
    try:
        context = ssl.create_default_context()
        bundle = client_config.get("caBundle")
        if bundle:
            with tempfile.NamedTemporaryFile() as ca:
                ca.write(base64.b64decode(bundle))
                ca.flush()
                context = ssl.create_default_context(cafile=ca.name)
        request = urllib.request.Request(url, _review(), {"Content-Type": "application/json"}, method="POST")
        with urllib.request.urlopen(request, timeout=PROBE_TIMEOUT_S, context=context) as answer:
            return _answered(json.loads(answer.read()))
    except (urllib.error.URLError, OSError, ValueError) as error:
        return str(getattr(error, "reason", error))
