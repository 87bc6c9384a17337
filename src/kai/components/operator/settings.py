"""The Config (``kai-config``) read into what the renderers need, with KAI v0.17's defaults
(pkg/apis/kai/v1: SetDefaultsWhereNeeded of Config, its global section and each component's).

Every component runs the one kai image; ``spec.<component>.service.image`` overrides it per component as in KAI.
"""

from dataclasses import dataclass, field
from typing import Any

from kai.components.operator.fields import Fields
from kai.components.shared.components import COMPONENTS
from kai.core.model import names

CONFIG_NAME = "kai-config"
DEFAULT_NAMESPACE = "kai-scheduler"
PULL_POLICIES = ("Always", "IfNotPresent", "Never")
DEFAULT_SECURITY_CONTEXT: dict[str, Any] = {
    "allowPrivilegeEscalation": False,
    "runAsNonRoot": True,
    "runAsUser": 10000,
    "capabilities": {"drop": ["ALL"]},
}


@dataclass(frozen=True)
class Service:
    """How one component's Deployment runs (KAI's ``common.Service`` plus the component's replicas)."""

    enabled: bool
    image: str
    pull_policy: str
    resources: dict[str, Any]
    affinity: dict[str, Any]
    replicas: int


@dataclass(frozen=True)
class Settings:
    namespace: str
    scheduler_name: str
    queue_label_key: str
    node_pool_label_key: str
    node_selector: dict[str, str]
    tolerations: list[Any]
    affinity: dict[str, Any]
    security_context: dict[str, Any]
    priority_class_name: str
    pull_secrets: list[str]
    services: dict[str, Service]
    spec: Fields
    """The whole ``spec``, for the component-specific fields each renderer reads."""
    generation: int = 0
    uid: str = ""
    extra: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Image:
    """An image reference as KAI's Config spells it: repository, name and tag."""

    repository: str
    name: str = "kai"
    tag: str = "latest"

    @property
    def url(self) -> str:
        return f"{self.repository}/{self.name}:{self.tag}" if self.repository else f"{self.name}:{self.tag}"

    def read(self, section: Fields) -> "Image":
        """This image with what ``section`` (a Config ``image``) overrides."""
        return Image(
            section.text("repository", self.repository), section.text("name", self.name), section.text("tag", self.tag)
        )


SECTIONS = tuple(component.section for component in COMPONENTS.values() if component.section)
"""The Config sections of the components the operator deploys (KAI's node-scale-adjuster and NUMA exporter are not
part of kai: docs/deviations.md; ``spec.prometheus`` is read by ``monitoring``)."""


def read_settings(config: dict[str, Any], image: Image, pull_policy: str = "IfNotPresent") -> Settings:
    """``config`` is the Config object; ``image`` the operator's own (every component runs it unless told
    otherwise). Raises ``InvalidObject`` naming the first bad field."""
    meta = config.get("metadata") or {}
    ref = f"Config {meta.get('name', CONFIG_NAME)}"
    spec = Fields(ref, config.get("spec"), "spec")
    global_ = spec.sub("global")
    replica_count = global_.integer("replicaCount", 1, minimum=0)
    secrets = [str(s) for s in global_.items("additionalImagePullSecrets")]
    single = global_.text("imagesPullSecret", "")
    if single and single not in secrets:
        secrets.append(single)
    security = dict(DEFAULT_SECURITY_CONTEXT) | global_.mapping("securityContext")
    services = {}
    for name in SECTIONS:
        section = spec.sub(name)
        service = section.sub("service")
        services[name] = Service(
            enabled=service.flag("enabled", True),
            image=image.read(service.sub("image")).url,
            pull_policy=service.sub("image").choice("pullPolicy", pull_policy, PULL_POLICIES),
            resources=service.mapping("resources"),
            affinity=service.mapping("affinity"),
            replicas=section.integer("replicas", replica_count, minimum=0),
        )
    return Settings(
        namespace=spec.text("namespace", DEFAULT_NAMESPACE) or DEFAULT_NAMESPACE,
        scheduler_name=global_.text("schedulerName", names.SCHEDULER_NAME),
        queue_label_key=global_.text("queueLabelKey", names.QUEUE_LABEL),
        node_pool_label_key=global_.text("nodePoolLabelKey", names.NODE_POOL_LABEL),
        node_selector=global_.strings("nodeSelector"),
        tolerations=global_.items("tolerations"),
        affinity=global_.mapping("affinity"),
        security_context=security,
        priority_class_name=global_.text("priorityClassName", ""),
        pull_secrets=secrets,
        services=services,
        spec=spec,
        generation=int(meta.get("generation") or 0),
        uid=str(meta.get("uid") or ""),
    )
