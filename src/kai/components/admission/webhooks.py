"""The contract between ``kai admission`` and whoever registers its webhooks (the operator; the e2e tests): every
path the server answers, and the webhook configurations KAI v0.17's operator renders for them, as data.

``configurations(client_config, …)`` returns the MutatingWebhookConfiguration and ValidatingWebhookConfigurations
to apply; ``client_config(path)`` says how the API server reaches a path (``service_client`` for the admission
Service, ``url_client`` for a server outside the cluster). docs/admission.md explains each choice.
"""

from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass
from typing import Any

from kai.core.model import names

Raw = dict[str, Any]
ClientConfig = Callable[[str], Raw]

MUTATE_POD = "/mutate--v1-pod"
VALIDATE_POD = "/validate--v1-pod"
VALIDATE_POD_RESIZE = "/validate--v1-pod-resize"
VALIDATE_TOPOLOGY = "/validate-kai-scheduler-v1alpha1-topology"
VALIDATE_QUEUE = "/validate-scheduling-run-ai-v2-queue"
VALIDATE_PODGROUP = "/validate-scheduling-run-ai-v2alpha2-podgroup"

MUTATING_CONFIGURATION = "mutating-kai-admission"
VALIDATING_CONFIGURATION = "validating-kai-admission"
QUEUE_CONFIGURATION = "kai-queue-validation-v2"
PODGROUP_CONFIGURATION = "kai-podgroup-validation-v2alpha2"
DEFAULT_NAMESPACE = "kai-scheduler"
SERVICE = "admission"
SERVICE_PORT = 443
WEBHOOK_PORT = 9443
"""The Service's port and the container's (KAI's ``admission.webhook.port`` / ``targetPort``)."""


@dataclass(frozen=True, slots=True)
class Webhook:
    path: str
    configuration: str
    name: str
    """The webhook's name in its configuration; ``{namespace}`` is filled in (KAI names pod webhooks after the
    admission Service's host)."""
    group: str
    version: str
    resource: str
    namespaced: bool
    operations: tuple[str, ...]
    section: str
    """The section of KAI's Config that names its configuration (and, for a controller's, turns it off)."""
    mutating: bool = False
    failure_policy: str = "Fail"
    """``Ignore`` for the pods/resize webhook: best effort, it never blocks a resize when kai cannot answer."""

    @property
    def for_pods(self) -> bool:
        return self.resource in ("pods", "pods/resize")


WEBHOOKS = (
    Webhook(MUTATE_POD, MUTATING_CONFIGURATION, "admission.{namespace}.svc", "", "v1", "pods", True, ("CREATE",),
            "admission", mutating=True),
    Webhook(VALIDATE_POD, VALIDATING_CONFIGURATION, "admission.{namespace}.svc", "", "v1", "pods", True,
            ("CREATE", "UPDATE"), "admission"),
    Webhook(VALIDATE_POD_RESIZE, VALIDATING_CONFIGURATION, "podresize.admission.{namespace}.svc", "", "v1",
            "pods/resize", True, ("UPDATE",), "admission", failure_policy="Ignore"),
    Webhook(VALIDATE_TOPOLOGY, VALIDATING_CONFIGURATION, "topology.admission.{namespace}.svc", "kai.scheduler",
            "v1alpha1", "topologies", False, ("CREATE", "UPDATE"), "admission"),
    Webhook(VALIDATE_QUEUE, QUEUE_CONFIGURATION, "queue-validation.kai.scheduler", "scheduling.run.ai", "v2",
            "queues", False, ("CREATE", "UPDATE"), "queueController"),
    Webhook(VALIDATE_PODGROUP, PODGROUP_CONFIGURATION, "podgroup-validation.kai.scheduler", "scheduling.run.ai",
            "v2alpha2", "podgroups", True, ("CREATE", "UPDATE"), "podGroupController"),
)  # fmt: skip
"""Every webhook kai admission serves: the one place to add one (with its decision, ``component.decisions``). The
operator, ``kai doctor`` and the e2e tests render and check the configurations from it."""
CONFIGURATIONS = {
    webhook.configuration: "MutatingWebhookConfiguration" if webhook.mutating else "ValidatingWebhookConfiguration"
    for webhook in WEBHOOKS
}
"""Each configuration's default name and its kind."""


def service_client(
    ca_bundle: str, namespace: str = DEFAULT_NAMESPACE, service: str = SERVICE, port: int = SERVICE_PORT
) -> ClientConfig:
    """The API server calls ``https://<service>.<namespace>.svc:<port><path>``; ``ca_bundle`` is base64 PEM."""
    return lambda path: {
        "service": {"namespace": namespace, "name": service, "path": path, "port": port},
        "caBundle": ca_bundle,
    }


def url_client(base_url: str, ca_bundle: str) -> ClientConfig:
    """The API server calls ``<base_url><path>`` (a server outside the cluster, e.g. ``https://127.0.0.1:9443``)."""
    return lambda path: {"url": base_url.rstrip("/") + path, "caBundle": ca_bundle}


def configurations(
    client_config: ClientConfig,
    *,
    namespace: str = DEFAULT_NAMESPACE,
    scheduler_name: str = names.SCHEDULER_NAME,
    namespace_labels: Mapping[str, str] | None = None,
    pod_labels: Mapping[str, str] | None = None,
    queue_label_key: str = "",
    labels: Mapping[str, str] | None = None,
    names: Mapping[str, str] | None = None,
    left_out: Collection[str] = (),
) -> list[Raw]:
    """The four webhook configurations, as KAI v0.17's operator renders them (``operands/admission``,
    ``operands/queue_controller``, ``operands/pod_group_controller``), all pointing at one kai admission server;
    ``names`` renames configurations (by their default name), those ``left_out`` are not rendered.

    Pod webhooks only see pods of ``scheduler_name`` (a matchCondition, so other pods never wait for kai, even
    when it is down) outside kube-system and kai's own namespace; ``namespace_labels`` / ``pod_labels`` are KAI's
    ``global.namespaceLabelSelector`` / ``podLabelSelector``, ``queue_label_key`` KAI's
    ``admission.queueLabelSelector`` (only namespaces carrying that label)."""
    documents: dict[str, Raw] = {}
    for webhook in WEBHOOKS:
        if webhook.configuration in left_out:
            continue
        name = (names or {}).get(webhook.configuration, webhook.configuration)
        document = documents.setdefault(
            webhook.configuration,
            {
                "apiVersion": "admissionregistration.k8s.io/v1",
                "kind": CONFIGURATIONS[webhook.configuration],
                "metadata": {"name": name, "labels": {"app": SERVICE, **(labels or {})}},
                "webhooks": [],
            },
        )
        entry: Raw = {
            "name": webhook.name.format(namespace=namespace),
            "admissionReviewVersions": ["v1"],
            "sideEffects": "None",
            "failurePolicy": webhook.failure_policy,
            "clientConfig": client_config(webhook.path),
            "rules": [
                {
                    "apiGroups": [webhook.group],
                    "apiVersions": [webhook.version],
                    "resources": [webhook.resource],
                    "operations": list(webhook.operations),
                    "scope": "Namespaced" if webhook.namespaced else "Cluster",
                }
            ],
        }
        if webhook.mutating:
            entry["reinvocationPolicy"] = "IfNeeded"
        if webhook.for_pods:
            entry["matchConditions"] = [
                {"name": "scheduler-name-match", "expression": f"object.spec.schedulerName == '{scheduler_name}'"}
            ]
            entry["namespaceSelector"] = _namespace_selector(namespace, namespace_labels, queue_label_key)
            if pod_labels:
                entry["objectSelector"] = {"matchLabels": dict(pod_labels)}
        document["webhooks"].append(entry)
    return list(documents.values())


def _namespace_selector(namespace: str, labels: Mapping[str, str] | None, queue_label_key: str) -> Raw:
    expressions: list[Raw] = [
        {"key": "kubernetes.io/metadata.name", "operator": "NotIn", "values": ["kube-system", namespace]}
    ]
    if queue_label_key:
        expressions.append({"key": queue_label_key, "operator": "Exists"})
    selector: Raw = {"matchExpressions": expressions}
    if labels:
        selector["matchLabels"] = dict(labels)
    return selector
