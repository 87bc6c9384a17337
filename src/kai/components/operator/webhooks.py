"""The webhook configurations, as KAI's operator writes them (pkg/operator/operands/admission, queue_controller,
pod_group_controller), rendered from the admission's own table of webhooks (``admission.webhooks``): names, paths,
rules, ``failurePolicy: Fail``, ``sideEffects: None``, the namespace selector that leaves out kube-system and the
install namespace, and the match condition on the scheduler name, so pods of other schedulers are never sent to kai.

kai serves every webhook from the admission Deployment (KAI also runs the Queue and PodGroup webhooks in the queue-
and podgroup-controllers), so all of them name the ``admission`` Service (docs/deviations.md).
"""

import base64
from typing import Any

from kai.components.admission import webhooks
from kai.components.operator.objects import MANAGED_BY
from kai.components.operator.settings import Settings

SERVICE = webhooks.SERVICE


def service_names(settings: Settings) -> list[str]:
    """The names the serving certificate must cover."""
    base = f"{SERVICE}.{settings.namespace}"
    return [f"{base}.svc", f"{base}.svc.cluster.local"]


def webhook_configurations(settings: Settings, bundle: bytes) -> list[dict[str, Any]]:
    """Every configuration of ``webhooks.WEBHOOKS`` under the names the Config gives them (KAI's
    ``admission.mutatingWebhookConfigurationName`` / ``validatingWebhookConfigurationName``, a controller's
    ``webhooks.webhookConfigurationNamePrefix`` + version), leaving out a controller's with ``enableValidation:
    false``."""
    admission = settings.spec.sub("admission")
    global_ = settings.spec.sub("global")
    names: dict[str, str] = {}
    left_out: set[str] = set()
    for webhook in webhooks.WEBHOOKS:
        section = settings.spec.sub(webhook.section)
        if webhook.section == "admission":
            field = "mutatingWebhookConfigurationName" if webhook.mutating else "validatingWebhookConfigurationName"
            names[webhook.configuration] = section.text(field, webhook.configuration)
            continue
        hooks = section.sub("webhooks")
        if not hooks.flag("enableValidation", True):
            left_out.add(webhook.configuration)
        prefix = hooks.text("webhookConfigurationNamePrefix", webhook.configuration.removesuffix(webhook.version))
        names[webhook.configuration] = prefix + webhook.version
    port = admission.sub("webhook").integer("port", webhooks.SERVICE_PORT, minimum=1)
    client = webhooks.service_client(base64.b64encode(bundle).decode(), settings.namespace, SERVICE, port)
    return webhooks.configurations(
        client,
        namespace=settings.namespace,
        scheduler_name=settings.scheduler_name,
        namespace_labels=global_.strings("namespaceLabelSelector"),
        pod_labels=global_.strings("podLabelSelector"),
        queue_label_key=settings.queue_label_key if admission.flag("queueLabelSelector", False) else "",
        labels=dict([MANAGED_BY]),
        names=names,
        left_out=left_out,
    )
