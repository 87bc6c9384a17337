"""Everything the Config and the SchedulingShards ask for, as objects: pure (no cluster), so each operand's
rendering is unit-tested on its own and the reconciler only applies, prunes and reports.
"""

from dataclasses import dataclass, field
from typing import Any

from kai.components.operator.certs import CA_SECRET, Issued, ca_secret_data, serving_secret_data
from kai.components.operator.monitoring import Found, MetricsService, read_monitoring, render_monitoring
from kai.components.operator.objects import labelled, owned_by
from kai.components.operator.queues import default_queues
from kai.components.operator.rbac import rbac_objects
from kai.components.operator.settings import Settings
from kai.components.operator.shard import SCHEDULER_ACCOUNT, render_shard, shard_objects
from kai.components.operator.webhooks import webhook_configurations
from kai.components.operator.workloads import COMPONENTS, WEBHOOK_SECRET, component_objects, metrics_port
from kai.core.model.errors import InvalidObject

Obj = dict[str, Any]


@dataclass
class ShardOutcome:
    name: str
    error: InvalidObject | None = None
    warnings: list[str] = field(default_factory=list)
    deployment: str = ""


@dataclass
class Desired:
    objects: list[Obj]
    """Applied as they are, in this order (ServiceAccounts and RBAC before the Deployments that use them)."""
    queues: list[Obj]
    """Written only when missing or changed in the Config (``queues.needs_write``)."""
    absent: list[tuple[str, str]]
    """(kind, key) of objects of turned-off components or webhooks: deleted if they exist."""
    deployments: list[str]
    """Keys of the Deployments whose availability makes the install Available."""
    shards: list[ShardOutcome]
    prometheus: str = ""
    """The key of the Prometheus whose availability counts too ("" when kai runs none)."""
    missing: str = ""
    """A dependency the Config needs that the cluster lacks ("" when none)."""


def _secret(settings: Settings, name: str, data: dict[str, str]) -> Obj:
    return labelled("Secret", name, "admission", settings.namespace) | {"type": "Opaque", "data": data}


def render(config: Obj, settings: Settings, shards: list[Obj], issued: Issued, found: Found) -> Desired:
    """The objects of ``config`` (already read into ``settings``) and of every shard; a shard whose spec is wrong
    is left out and reported in its outcome, the others go on. ``found``: what the monitoring objects depend on."""
    read_monitoring(settings.spec)  # a bad spec.prometheus is the Config's, before any shard reads it
    ns = settings.namespace
    objects: list[Obj] = []
    absent: list[tuple[str, str]] = []
    deployments: list[str] = []
    services: list[MetricsService] = []
    admission = settings.services["admission"].enabled
    if admission:  # before the Deployment that mounts them
        objects.append(_secret(settings, CA_SECRET, ca_secret_data(issued)))
        objects.append(_secret(settings, WEBHOOK_SECRET, serving_secret_data(issued)))
    for component in COMPONENTS:
        if not settings.services[component.section].enabled:
            absent += [("Deployment", f"{ns}/{component.operand}"), ("Service", f"{ns}/{component.operand}")]
            continue
        objects += rbac_objects(settings, component.operand, component.operand)
        objects += component_objects(settings, component)
        deployments.append(f"{ns}/{component.operand}")
        services.append(MetricsService(component.operand, metrics_port(component.operand)["name"]))
    webhooks = webhook_configurations(settings, issued.bundle)
    if admission:
        objects += webhooks
    else:
        absent += [(w["kind"], w["metadata"]["name"]) for w in webhooks]
    absent += _turned_off_validation(settings)
    outcomes: list[ShardOutcome] = []
    scheduler_rbac = False
    for shard in sorted(shards, key=lambda s: str(s["metadata"]["name"])):
        outcome = ShardOutcome(shard["metadata"]["name"])
        outcomes.append(outcome)
        if not settings.services["scheduler"].enabled:
            continue
        try:
            rendered = render_shard(settings, shard)
        except InvalidObject as error:
            outcome.error = error
            continue
        outcome.warnings = rendered.warnings
        if not scheduler_rbac:
            objects += rbac_objects(settings, "scheduler", SCHEDULER_ACCOUNT)
            scheduler_rbac = True
        for obj in shard_objects(settings, shard, rendered):
            objects.append(owned_by(obj, shard))
            if obj["kind"] == "Deployment":
                outcome.deployment = f"{ns}/{obj['metadata']['name']}"
                deployments.append(outcome.deployment)
            if obj["kind"] == "Service":
                services.append(MetricsService(obj["metadata"]["name"], metrics_port(obj["metadata"]["name"])["name"]))
    monitoring = render_monitoring(settings, services, found)
    objects += monitoring.objects
    absent += monitoring.absent
    for obj in objects:  # what no shard owns goes with the Config
        if "ownerReferences" not in obj["metadata"]:
            owned_by(obj, config)
    return Desired(
        objects, default_queues(settings.spec), absent, deployments, outcomes, monitoring.prometheus, monitoring.missing
    )


def _turned_off_validation(settings: Settings) -> list[tuple[str, str]]:
    """The Queue or PodGroup webhook configuration of a Config that turned its validation off."""
    out = []
    for section, prefix, version in (
        ("queueController", "kai-queue-validation-", "v2"),
        ("podGroupController", "kai-podgroup-validation-", "v2alpha2"),
    ):
        hooks = settings.spec.sub(section).sub("webhooks")
        if not hooks.flag("enableValidation", True):
            out.append(
                ("ValidatingWebhookConfiguration", f"{hooks.text('webhookConfigurationNamePrefix', prefix)}{version}")
            )
    return out
