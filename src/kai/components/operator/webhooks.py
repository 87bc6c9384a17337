"""The webhook configurations, as KAI's operator writes them (pkg/operator/operands/admission, queue_controller,
pod_group_controller): names, paths, rules, ``failurePolicy: Fail``, ``sideEffects: None``, the namespace selector
that leaves out kube-system and the install namespace, and the match condition on the scheduler name, so pods of
other schedulers are never sent to kai.

kai serves every webhook from the admission Deployment (KAI also runs the Queue and PodGroup webhooks in the queue-
and podgroup-controllers), so all of them name the ``admission`` Service (docs/deviations.md).
"""

import base64
from typing import Any

from kai.components.operator.objects import labelled
from kai.components.operator.settings import Settings

SERVICE = "admission"


def service_names(settings: Settings) -> list[str]:
    """The names the serving certificate must cover."""
    base = f"{SERVICE}.{settings.namespace}"
    return [f"{base}.svc", f"{base}.svc.cluster.local"]


def _client(settings: Settings, path: str, bundle: bytes, port: int) -> dict[str, Any]:
    reference = {"namespace": settings.namespace, "name": SERVICE, "path": path, "port": port}
    return {"service": reference, "caBundle": base64.b64encode(bundle).decode()}


def _rule(group: str, version: str, resource: str, operations: list[str], scope: str) -> dict[str, Any]:
    return {
        "apiGroups": [group],
        "apiVersions": [version],
        "resources": [resource],
        "operations": operations,
        "scope": scope,
    }


def _webhook(name: str, client: dict[str, Any], rule: dict[str, Any]) -> dict[str, Any]:
    return {
        "name": name,
        "admissionReviewVersions": ["v1"],
        "sideEffects": "None",
        "failurePolicy": "Fail",
        "clientConfig": client,
        "rules": [rule],
    }


def _pod_scope(settings: Settings) -> dict[str, Any]:
    """Which pods the pod webhooks see: not kube-system's nor the install namespace's, only kai-scheduler's."""
    admission = settings.spec.sub("admission")
    global_ = settings.spec.sub("global")
    requirements: list[dict[str, Any]] = [
        {
            "key": "kubernetes.io/metadata.name",
            "operator": "NotIn",
            "values": ["kube-system", settings.namespace],
        }
    ]
    if admission.flag("queueLabelSelector", False):
        requirements.append({"key": settings.queue_label_key, "operator": "Exists"})
    namespace_selector: dict[str, Any] = {"matchExpressions": requirements}
    if global_.strings("namespaceLabelSelector"):
        namespace_selector["matchLabels"] = global_.strings("namespaceLabelSelector")
    scope: dict[str, Any] = {
        "namespaceSelector": namespace_selector,
        "matchConditions": [
            {"name": "scheduler-name-match", "expression": f"object.spec.schedulerName == '{settings.scheduler_name}'"}
        ],
    }
    if global_.strings("podLabelSelector"):
        scope["objectSelector"] = {"matchLabels": global_.strings("podLabelSelector")}
    return scope


def webhook_configurations(settings: Settings, bundle: bytes) -> list[dict[str, Any]]:
    admission = settings.spec.sub("admission")
    port = admission.sub("webhook").integer("port", 443, minimum=1)
    host = f"{SERVICE}.{settings.namespace}.svc"
    pods = _pod_scope(settings)
    mutating = labelled(
        "MutatingWebhookConfiguration",
        admission.text("mutatingWebhookConfigurationName", "mutating-kai-admission"),
        SERVICE,
    )
    mutating["webhooks"] = [
        _webhook(
            host, _client(settings, "/mutate--v1-pod", bundle, port), _rule("", "v1", "pods", ["CREATE"], "Namespaced")
        )
        | pods
        | {"reinvocationPolicy": "IfNeeded"}
    ]
    validating = labelled(
        "ValidatingWebhookConfiguration",
        admission.text("validatingWebhookConfigurationName", "validating-kai-admission"),
        SERVICE,
    )
    validating["webhooks"] = [
        _webhook(
            host,
            _client(settings, "/validate--v1-pod", bundle, port),
            _rule("", "v1", "pods", ["CREATE", "UPDATE"], "Namespaced"),
        )
        | pods,
        _webhook(
            f"topology.{host}",
            _client(settings, "/validate-kai-scheduler-v1alpha1-topology", bundle, port),
            _rule("kai.scheduler", "v1alpha1", "topologies", ["CREATE", "UPDATE"], "Cluster"),
        ),
    ]
    configurations = [mutating, validating]
    for section, default_prefix, webhook_name, group, version, resource, scope in (
        (
            "queueController",
            "kai-queue-validation-",
            "queue-validation.kai.scheduler",
            "scheduling.run.ai",
            "v2",
            "queues",
            "Cluster",
        ),
        (
            "podGroupController",
            "kai-podgroup-validation-",
            "podgroup-validation.kai.scheduler",
            "scheduling.run.ai",
            "v2alpha2",
            "podgroups",
            "Namespaced",
        ),
    ):
        hooks = settings.spec.sub(section).sub("webhooks")
        if not hooks.flag("enableValidation", True):
            continue
        name = f"{hooks.text('webhookConfigurationNamePrefix', default_prefix)}{version}"
        path = f"/validate-{group.replace('.', '-')}-{version}-{resource.rstrip('s')}"
        configuration = labelled("ValidatingWebhookConfiguration", name, SERVICE)
        configuration["webhooks"] = [
            _webhook(
                webhook_name,
                _client(settings, path, bundle, port),
                _rule(group, version, resource, ["CREATE", "UPDATE"], scope),
            )
        ]
        configurations.append(configuration)
    return configurations
