"""Monitoring as KAI's operator renders it (pkg/operator/operands/prometheus, pkg/apis/kai/v1/prometheus): the
Config's ``spec.prometheus`` with KAI's defaults, and what it asks for once the Prometheus Operator's CRDs are there.

- ``enabled``: a ServiceMonitor for every metrics Service of kai's components (KAI makes one for the queue
  controller only) and KAI's one for kube-state-metrics (``monitoring`` or ``default`` namespace), labelled with the
  accounting label; and, unless ``externalPrometheusUrl`` names the user's own Prometheus, a ``Prometheus`` in KAI's
  shape (``instanceName``, its ServiceAccount of that name, KAI's ``kai-prometheus`` ClusterRole bound to it,
  retention, storage, selecting the ServiceMonitors by the accounting label) and the ``usage-prometheus`` Service the
  scheduler's time-based fair share reads (``usage_url``).
- Without the Prometheus CRD, an enabled in-cluster Prometheus is a missing dependency (KAI's
  ``DependenciesFulfilled`` condition); the rest of the install goes on.
- A Prometheus kai made and no longer wanted is kept for its retention (KAI's ``kai/deprecation-timestamp``
  annotation), so turning monitoring off does not throw away the usage history at once; then it is deleted.
"""

from dataclasses import dataclass
from typing import Any

from kai.components.operator.fields import Fields
from kai.components.operator.objects import key_of, labelled, made_by_kai
from kai.components.operator.settings import Settings
from kai.core.model.duration import parse_prometheus_duration
from kai.core.model.errors import InvalidObject
from kai.core.model.meta import format_time, parse_time
from kai.core.model.quantity import parse_quantity

Obj = dict[str, Any]
PROMETHEUS_CRD = "prometheuses.monitoring.coreos.com"
SERVICE_MONITOR_CRD = "servicemonitors.monitoring.coreos.com"
USAGE_SERVICE, USAGE_PORT = "usage-prometheus", 9090
ROLE = "kai-prometheus"
DEPRECATED = "kai/deprecation-timestamp"
DEFAULT_RETENTION_S = 30 * 86400.0
"""How long an unwanted Prometheus without a readable retention is kept (KAI's 30 days)."""
ACCOUNTING = ("kai.scheduler/accounting", "true")
TOKEN_FILE = "/var/run/secrets/kubernetes.io/serviceaccount/token"
KUBE_STATE_METRICS = ("kube-state-metrics", "http", {"app.kubernetes.io/name": "kube-state-metrics"})
KUBE_STATE_METRICS_NAMESPACES = ["monitoring", "default"]
PROMETHEUS_RULES = [
    {
        "apiGroups": [""],
        "resources": ["nodes", "nodes/metrics", "services", "endpoints", "pods"],
        "verbs": ["get", "list", "watch"],
    },
    {"apiGroups": ["discovery.k8s.io"], "resources": ["endpointslices"], "verbs": ["get", "list", "watch"]},
    {"apiGroups": ["networking.k8s.io"], "resources": ["ingresses"], "verbs": ["get", "list", "watch"]},
    {"nonResourceURLs": ["/metrics", "/metrics/cadvisor"], "verbs": ["get"]},
]
"""What KAI's chart gives its Prometheus (templates/rbac/prometheus-pod.yaml): discover and scrape targets."""


@dataclass(frozen=True)
class MetricsService:
    """A component's metrics Service and the name of its metrics port, which a ServiceMonitor selects."""

    name: str
    port: str


@dataclass(frozen=True)
class Monitoring:
    """``spec.prometheus`` read with KAI's defaults (SetDefaultsWhereNeeded)."""

    enabled: bool
    instance: str
    retention: str
    sample_interval: str
    persistent: bool
    storage_size: str
    storage_class: str
    external_url: str
    service_monitors: bool
    interval: str
    scrape_timeout: str
    token_file: str
    accounting: tuple[str, str]

    @property
    def in_cluster(self) -> bool:
        """kai's operator runs the Prometheus (no external one named)."""
        return self.enabled and not self.external_url


@dataclass(frozen=True)
class Found:
    """What the reconciler read before rendering: which of the Prometheus Operator's CRDs are established, the
    Prometheus kai may have made earlier (or None), and the time."""

    prometheus_crd: bool
    service_monitor_crd: bool
    existing: Obj | None
    now: float


@dataclass
class Rendered:
    objects: list[Obj]
    absent: list[tuple[str, str]]
    missing: str
    """A missing dependency, for the Config's DependenciesFulfilled condition ("" when none)."""
    prometheus: str
    """The key of the Prometheus whose availability counts for the install's ("" when none is wanted)."""


def read_monitoring(spec: Fields) -> Monitoring:
    """Raises ``InvalidObject`` naming a field the Prometheus Operator would refuse."""
    section = spec.sub("prometheus")
    monitors = section.sub("serviceMonitor")
    storage_size = section.text("storageSize", "50Gi")
    parse_quantity(storage_size, section.ref, section.at("storageSize"))
    return Monitoring(
        enabled=section.flag("enabled", False),
        instance=section.text("instanceName", "") or "prometheus",
        retention=_duration(section, "retentionPeriod", "2w"),
        sample_interval=_duration(section, "sampleInterval", "1m"),
        persistent=section.flag("enablePersistentStorage", True),
        storage_size=storage_size,
        storage_class=section.text("storageClassName", "standard"),
        external_url=section.text("externalPrometheusUrl", ""),
        service_monitors=monitors.flag("enabled", True),
        interval=_duration(monitors, "interval", "30s"),
        scrape_timeout=_duration(monitors, "scrapeTimeout", "10s"),
        token_file=monitors.text("bearerTokenFile", TOKEN_FILE),
        accounting=(
            section.text("accountingLabelKey", ACCOUNTING[0]),
            section.text("accountingLabelValue", ACCOUNTING[1]),
        ),
    )


def _duration(section: Fields, name: str, default: str) -> str:
    text = section.text(name, default)
    parse_prometheus_duration(text, section.ref, section.at(name))
    return text


def usage_url(settings: Settings) -> str:
    """The Prometheus a shard's ``clientType: prometheus`` reads when it names none: the external one, else the one
    kai's operator makes ("" when there is neither). KAI prefers the in-cluster one when ``enabled`` is set even with
    an external URL, naming a Service it did not make then (docs/deviations.md)."""
    monitoring = read_monitoring(settings.spec)
    if monitoring.external_url:
        return monitoring.external_url
    if monitoring.enabled:
        return f"http://{USAGE_SERVICE}.{settings.namespace}.svc.cluster.local:{USAGE_PORT}"
    return ""


def render_monitoring(settings: Settings, services: list[MetricsService], found: Found) -> Rendered:
    """The monitoring objects the Config asks for, given what the cluster has. Objects of a part turned off are
    listed as absent only where the Prometheus Operator's CRDs are installed (nothing could have been made
    otherwise), so a cluster without them costs no reads."""
    monitoring = read_monitoring(settings.spec)
    ns = settings.namespace
    out = Rendered([], [], "", "")
    out.missing = _missing(monitoring, found)
    if monitoring.in_cluster and found.prometheus_crd:
        out.objects += [*_prometheus_objects(settings, monitoring, None), _usage_service(settings, monitoring)]
        out.prometheus = f"{ns}/{monitoring.instance}"
    elif found.prometheus_crd:
        since = _deprecated(found)
        if since is not None:
            out.objects += _prometheus_objects(settings, monitoring, since)
        else:
            out.absent += [(o["kind"], key_of(o)) for o in _prometheus_objects(settings, monitoring, None)]
        out.absent.append(("Service", f"{ns}/{USAGE_SERVICE}"))
    monitors = _service_monitors(settings, monitoring, services)
    if monitoring.enabled and monitoring.service_monitors and found.service_monitor_crd:
        out.objects += monitors
    elif found.service_monitor_crd:
        out.absent += [("ServiceMonitor", key_of(m)) for m in monitors]
    return out


def _missing(monitoring: Monitoring, found: Found) -> str:
    """The Prometheus Operator's CRDs the Config needs and the cluster lacks, as the Config's condition says it
    (KAI's HasMissingDependencies names the Prometheus one; kai names the ServiceMonitor one too)."""
    lacking = []
    if monitoring.in_cluster and not found.prometheus_crd:
        lacking.append(PROMETHEUS_CRD)
    if monitoring.enabled and monitoring.service_monitors and not found.service_monitor_crd:
        lacking.append(SERVICE_MONITOR_CRD)
    if not lacking:
        return ""
    kinds = "CustomResourceDefinitions" if len(lacking) > 1 else "CustomResourceDefinition"
    return (
        f"prometheus operator: spec.prometheus.enabled needs the {kinds} {' and '.join(lacking)}, not installed "
        "(install the Prometheus Operator); the rest of kai is deployed"
    )


def _deprecated(found: Found) -> str | None:
    """For a Prometheus kai made that is no longer wanted: the time it was deprecated while its retention runs (now,
    for a newly unwanted one); None once the retention has passed, or when kai made none."""
    existing = found.existing
    if existing is None or not made_by_kai(existing):
        return None
    since = (existing["metadata"].get("annotations") or {}).get(DEPRECATED, "")
    try:
        started = parse_time(since, "Prometheus", f"metadata.annotations.{DEPRECATED}")
    except InvalidObject:
        return format_time(found.now)  # not set, or unreadable: deprecated from now, as KAI resets it
    try:
        retention = parse_prometheus_duration(str(existing.get("spec", {}).get("retention") or ""), "", "")
    except InvalidObject:
        retention = DEFAULT_RETENTION_S
    return since if found.now < started + (retention or DEFAULT_RETENTION_S) else None


def _prometheus_objects(settings: Settings, monitoring: Monitoring, deprecated: str | None) -> list[Obj]:
    """KAI's Prometheus (prometheusForKAIConfig), its ServiceAccount, and the RBAC KAI's chart gives it."""
    ns, name = settings.namespace, monitoring.instance
    key, value = monitoring.accounting
    spec: Obj = {
        "podMetadata": {"labels": {"app": name}},
        "retention": monitoring.retention,
        "scrapeInterval": monitoring.sample_interval,
        "serviceAccountName": name,
        "ruleSelector": {"matchLabels": {key: value}},
        "ruleNamespaceSelector": {},
    }
    if monitoring.service_monitors:
        spec["serviceMonitorSelector"] = {"matchLabels": {key: value}}
        spec["serviceMonitorNamespaceSelector"] = {}
    if monitoring.persistent:
        claim = {
            "storageClassName": monitoring.storage_class,
            "accessModes": ["ReadWriteOnce"],
            "resources": {"requests": {"storage": monitoring.storage_size}},
        }
        spec["storage"] = {"volumeClaimTemplate": {"spec": claim}}
    prometheus = labelled("Prometheus", name, name, ns) | {"spec": spec}
    if deprecated is not None:
        prometheus["metadata"]["annotations"] = {DEPRECATED: deprecated}
    subject = [{"kind": "ServiceAccount", "name": name, "namespace": ns}]
    return [
        labelled("ServiceAccount", name, name, ns),
        labelled("ClusterRole", ROLE, name) | {"rules": PROMETHEUS_RULES},
        labelled("ClusterRoleBinding", ROLE, name)
        | {
            "subjects": subject,
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": ROLE},
        },
        prometheus,
    ]


def _usage_service(settings: Settings, monitoring: Monitoring) -> Obj:
    """KAI's ``usage-prometheus``: the Prometheus Operator's pods of the instance, on its ``web`` port."""
    service = labelled("Service", USAGE_SERVICE, monitoring.instance, settings.namespace)
    service["spec"] = {
        "type": "ClusterIP",
        "selector": {"app.kubernetes.io/instance": monitoring.instance, "app.kubernetes.io/name": "prometheus"},
        "ports": [{"name": "web", "port": USAGE_PORT, "protocol": "TCP"}],
    }
    return service


def _service_monitors(settings: Settings, monitoring: Monitoring, services: list[MetricsService]) -> list[Obj]:
    """One per metrics Service (job = its ``app`` label), and KAI's for kube-state-metrics."""
    targets = [(s.name, s.port, {"app": s.name}, [settings.namespace]) for s in services]
    name, port, selector = KUBE_STATE_METRICS
    targets.append((name, port, selector, KUBE_STATE_METRICS_NAMESPACES))
    monitors = []
    for name, port, selector, namespaces in targets:
        monitor = labelled("ServiceMonitor", name, name, settings.namespace)
        monitor["metadata"]["labels"][monitoring.accounting[0]] = monitoring.accounting[1]
        endpoint = {
            "port": port,
            "interval": monitoring.interval,
            "scrapeTimeout": monitoring.scrape_timeout,
            "bearerTokenFile": monitoring.token_file,
        }
        monitor["spec"] = {
            "jobLabel": "app",
            "namespaceSelector": {"matchNames": namespaces},
            "selector": {"matchLabels": selector},
            "endpoints": [endpoint],
        }
        monitors.append(monitor)
    return monitors


def available(prometheus: Obj | None) -> bool:
    """The Prometheus Operator says the instance is Available (KAI's IsAvailable of this operand)."""
    conditions = ((prometheus or {}).get("status") or {}).get("conditions") or []
    return any(c.get("type") == "Available" and c.get("status") == "True" for c in conditions)


def established(crd: Obj | None) -> bool:
    conditions = ((crd or {}).get("status") or {}).get("conditions") or []
    return any(c.get("type") == "Established" and c.get("status") == "True" for c in conditions)
