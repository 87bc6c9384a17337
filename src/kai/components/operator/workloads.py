"""The Deployment, metrics Service and ServiceAccount of each component the Config deploys (KAI's operands: admission,
binder, pod-grouper, podgroup-controller, queue-controller; the scheduler's are per shard, ``shard``).

Names and ``app`` labels are KAI's (the Deployment, its ServiceAccount and its pods' ``app`` label are the
component's name). Every container runs the one kai image's ``kai <command>``, as a non-root user, with the
metrics and health endpoints on KAI's ports (8080, 8081) and its probes on ``/healthz`` and ``/readyz``.
"""

from typing import Any

from kai.components.operator.fields import Fields
from kai.components.operator.objects import labelled
from kai.components.operator.settings import Settings
from kai.components.shared import components as shared
from kai.components.shared.components import Component
from kai.core.model import names

METRICS_PORT, PROBE_PORT, WEBHOOK_PORT = 8080, 8081, 9443
SCHEDULER_PROBE_PORT = 8082
"""The scheduler's probes: 8081 is its plugin server's (KAI's ``--plugin-server-port``, on loopback)."""
METRICS_PORT_NAMES = {"queue-controller": "metrics"}
"""KAI's metrics port names that are not ``http-metrics`` (its queue controller's ``ControllerService.Metrics``)."""
CERT_DIR = "/tmp/k8s-webhook-server/serving-certs"
WEBHOOK_SECRET = "kai-admission-webhook-tls-secret"


COMPONENTS = tuple(
    sorted(
        (c for c in shared.COMPONENTS.values() if c.operand and not c.per_shard),
        key=lambda component: component.operand,
    )
)
"""The components the Config deploys (``shared.components``), by operand name."""


def container_args(settings: Settings, component: Component) -> list[str]:
    """``kai <command>`` and its flags, from the component's Config section."""
    section = settings.spec.sub(component.section)
    args = [
        component.name,
        f"--metrics-bind-address=:{METRICS_PORT}",
        f"--health-probe-bind-address=:{PROBE_PORT}",
    ]
    if settings.services[component.section].replicas > 1:
        args.append("--leader-elect")
    if component.name == "admission":
        args += _admission_args(settings, section)
    if component.name == "binder":
        namespace = section.sub("resourceReservation").text("namespace", names.RESERVATION_NAMESPACE)
        args.append(f"--resource-reservation-namespace={namespace}")
    args += client_args(section, component)
    if component.reconciles and section.raw.get("maxConcurrentReconciles") is not None:
        args.append(f"--max-concurrent-reconciles={section.integer('maxConcurrentReconciles', 0, minimum=1)}")
    return args


SERVICE_CLIENT_DEFAULTS = {"qps": 20, "burst": 100}
"""KAI's ``service.k8sClientConfig`` defaults, which its operator passes to every component with a Service section
since KAI #2027 (before, only the binder got them)."""


def client_args(section: Fields, component: Component) -> list[str]:
    """``--qps`` / ``--burst`` from the section's ``service.k8sClientConfig``, with KAI's defaults (20 / 100) where
    the Config leaves them out. The pod-grouper takes its own ``k8sClientConfig`` (as KAI reads it; kai also its
    ``service.k8sClientConfig``), with no default: its binary's (50 / 300) then holds, as in KAI."""
    service = section.sub("service").sub("k8sClientConfig")
    if component.name != "podgrouper":
        return [
            f"--{name}={service.integer(name, default, minimum=1)}" for name, default in SERVICE_CLIENT_DEFAULTS.items()
        ]
    args: list[str] = []
    for client in (section.sub("k8sClientConfig"), service):
        for name in SERVICE_CLIENT_DEFAULTS:
            if client.raw.get(name) is not None and not any(a.startswith(f"--{name}=") for a in args):
                args.append(f"--{name}={client.integer(name, 0, minimum=1)}")
    return args


def _admission_args(settings: Settings, section: Fields) -> list[str]:
    """KAI's admission flags (pkg/operator/operands/admission)."""
    webhook = section.sub("webhook")
    args = [
        f"--scheduler-name={settings.scheduler_name}",
        f"--webhook-addr={webhook.integer('targetPort', WEBHOOK_PORT, minimum=1)}",
        f"--cert-dir={CERT_DIR}",
    ]
    if section.flag("gpuSharing", False):
        args.append("--gpu-sharing-enabled=true")
    runtime_class = section.text("gpuPodRuntimeClassName", section.text("gpuFractionRuntimeClassName", "nvidia"))
    args.append(f"--gpu-pod-runtime-class-name={runtime_class}")
    resize = section.sub("inPlacePodResize")  # KAI #2021
    if not resize.flag("validateQuota", True):
        args.append("--validate-pod-resize-quota=false")
    if resize.flag("blockUpsizeOnBoundedQueues", False):
        args.append("--block-upsize-on-bounded-queues=true")
    return args


def deployment(
    settings: Settings,
    name: str,
    section: str,
    args: list[str],
    *,
    account: str,
    volumes: list[dict[str, Any]] | None = None,
    mounts: list[dict[str, Any]] | None = None,
    extra_ports: list[dict[str, Any]] | None = None,
    probe_port: int = PROBE_PORT,
) -> dict[str, Any]:
    """One component's Deployment: replicas, image, pull policy, resources and affinity from its service section;
    node selector, tolerations, priority class, pull secrets and security context from ``global``."""
    service = settings.services[section]
    container: dict[str, Any] = {
        "name": name,
        "image": service.image,
        "imagePullPolicy": service.pull_policy,
        "args": args,
        "ports": [
            {"name": "metrics", "containerPort": METRICS_PORT},
            {"name": "probe", "containerPort": probe_port},
            *(extra_ports or []),
        ],
        "readinessProbe": {"httpGet": {"path": "/readyz", "port": probe_port}, "initialDelaySeconds": 5},
        "livenessProbe": {"httpGet": {"path": "/healthz", "port": probe_port}, "initialDelaySeconds": 15},
        "securityContext": settings.security_context,
    }
    if service.resources:
        container["resources"] = service.resources
    if mounts:
        container["volumeMounts"] = mounts
    pod: dict[str, Any] = {"serviceAccountName": account, "containers": [container]}
    affinity = service.affinity or settings.affinity
    for key, value in (
        ("nodeSelector", settings.node_selector),
        ("tolerations", settings.tolerations),
        ("affinity", affinity),
        ("priorityClassName", settings.priority_class_name),
        ("imagePullSecrets", [{"name": secret} for secret in settings.pull_secrets]),
        ("volumes", volumes),
    ):
        if value:
            pod[key] = value
    obj = labelled("Deployment", name, name, settings.namespace)
    obj["spec"] = {
        "replicas": service.replicas,
        "selector": {"matchLabels": {"app": name}},
        "strategy": {"type": "Recreate"},
        "template": {"metadata": {"labels": {"app": name}}, "spec": pod},
    }
    return obj


def service_object(settings: Settings, name: str, ports: list[dict[str, Any]]) -> dict[str, Any]:
    obj = labelled("Service", name, name, settings.namespace)
    obj["spec"] = {
        "type": "ClusterIP",
        "selector": {"app": name},
        "ports": [{"protocol": "TCP", **port} for port in ports],
    }
    return obj


def _cert_volume() -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    volume = {"name": "cert", "secret": {"secretName": WEBHOOK_SECRET, "defaultMode": 0o644}}
    return [volume], [{"name": "cert", "mountPath": CERT_DIR, "readOnly": True}]


def metrics_port(name: str) -> dict[str, Any]:
    """The metrics port of a component's Service, named as KAI names it (``metrics`` on the queue controller's,
    ``http-metrics`` on the others'): what a ServiceMonitor selects."""
    return {"name": METRICS_PORT_NAMES.get(name, "http-metrics"), "port": METRICS_PORT, "targetPort": METRICS_PORT}


def component_objects(settings: Settings, component: Component) -> list[dict[str, Any]]:
    """The Deployment and metrics Service of one component (its RBAC comes from ``rbac``)."""
    metrics = metrics_port(component.operand)
    args = container_args(settings, component)
    if component.name != "admission":
        return [
            deployment(settings, component.operand, component.section, args, account=component.operand),
            service_object(settings, component.operand, [metrics]),
        ]
    webhook = settings.spec.sub("admission").sub("webhook")
    target = webhook.integer("targetPort", WEBHOOK_PORT, minimum=1)
    volumes, mounts = _cert_volume()
    port = {"name": "webhook", "containerPort": target}
    return [
        deployment(
            settings, "admission", "admission", args, account="admission", volumes=volumes, mounts=mounts,
            extra_ports=[port],
        ),
        service_object(
            settings,
            "admission",
            [{"name": "webhook", "port": webhook.integer("port", 443, minimum=1), "targetPort": target}, metrics],
        ),
    ]  # fmt: skip
