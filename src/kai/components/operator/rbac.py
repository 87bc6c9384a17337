"""Least-privilege RBAC per component: exactly what each kai component reads (its informers, ``runtime.KINDS``, and
what it gets on demand) and writes (every write in ``kai.components``), nothing more.

Cluster-wide rules go in a ClusterRole bound to the component's ServiceAccount; the leader-election Lease is only
in the install namespace, so that is a Role there. The operator may create and bind exactly these roles and its
Prometheus' (the chart gives it ``escalate`` and ``bind`` on their names only: ``ROLE_NAMES``).
"""

from typing import Any

from kai.components.operator import monitoring
from kai.components.operator.objects import labelled
from kai.components.operator.settings import Settings
from kai.components.podgrouper.rules.hub import READ_KINDS
from kai.core.model.suspension import SUSPEND_FIELDS

Rule = dict[str, Any]
READ = ("get", "list", "watch")
CORE, KAI, KAI_CONFIG = "", "scheduling.run.ai", "kai.scheduler"


def rule(group: str, resources: tuple[str, ...], verbs: tuple[str, ...]) -> Rule:
    return {"apiGroups": [group], "resources": list(resources), "verbs": list(verbs)}


EVENTS = rule(CORE, ("events",), ("create", "update", "patch"))
"""The shared event recorder creates an Event and counts repeats on it."""
LEASES = rule("coordination.k8s.io", ("leases",), ("get", "create", "update"))


def _suspendable() -> list[Rule]:
    """The scheduler suspends and resumes these workloads (``kai.core.model.suspension.SUSPEND_FIELDS``)."""
    plurals: dict[str, set[str]] = {}
    for api_version, kind in SUSPEND_FIELDS:
        plurals.setdefault(api_version.rpartition("/")[0], set()).add(kind.lower() + "s")
    return [rule(group, tuple(sorted(found)), ("get", "patch")) for group, found in plurals.items()]


CLUSTER_RULES: dict[str, list[Rule]] = {
    "scheduler": [
        rule(CORE, ("pods",), (*READ, "delete", "update", "patch")),  # evictions; pod views are written by patch
        rule(CORE, ("pods/eviction",), ("create",)),  # evictions through the Eviction API (PDBs enforced)
        rule(CORE, ("pods/status",), ("update", "patch")),  # PodScheduled conditions
        rule(CORE, ("nodes",), READ),
        rule(CORE, ("configmaps",), READ),  # the ConfigMap pre-predicate: a pod's ConfigMaps exist
        rule(KAI, ("queues",), READ),
        rule(KAI_CONFIG, ("topologies",), READ),
        rule(KAI, ("queues/status",), ("update", "patch")),  # InvalidObject conditions
        rule(KAI, ("podgroups",), (*READ, "update", "patch")),  # annotations (last start, staleness)
        rule(KAI, ("podgroups/status",), ("update", "patch")),
        rule(KAI, ("bindrequests",), (*READ, "create", "delete")),
        rule("scheduling.k8s.io", ("priorityclasses",), READ),
        rule("resource.k8s.io", ("resourceclaims", "resourceslices"), READ),  # the DynamicResourceAllocation gate
        rule("topology.node.k8s.io", ("noderesourcetopologies",), READ),  # the numa plugin
        rule("policy", ("poddisruptionbudgets",), READ),  # victims within their PDBs
        *_suspendable(),  # suspend instead of delete, and resume
        EVENTS,
    ],
    "binder": [
        rule(KAI, ("bindrequests",), READ),
        rule(KAI, ("bindrequests/status",), ("update", "patch")),
        rule(CORE, ("pods",), (*READ, "create", "delete", "update", "patch")),  # reservation pods, GPU annotations
        rule(CORE, ("pods/binding",), ("create",)),
        rule(CORE, ("pods/status",), ("update", "patch")),  # PodBound condition
        rule(CORE, ("nodes",), READ),
        rule(CORE, ("namespaces",), ("create",)),  # the GPU reservation namespace, when it is missing
        rule(CORE, ("configmaps",), ("get", "create", "patch", "delete")),  # a shared GPU's ConfigMaps
        rule("resource.k8s.io", ("resourceclaims",), READ),
        rule("resource.k8s.io", ("resourceclaims/status",), ("update", "patch")),
        EVENTS,
    ],
    "pod-grouper": [
        rule(CORE, ("pods",), (*READ, "update", "patch")),  # the pod-group-name annotation
        rule(KAI, ("podgroups",), (*READ, "create", "update", "patch")),
        rule("scheduling.k8s.io", ("priorityclasses",), READ),
        *(
            rule(group, tuple(sorted({k.plural for k in READ_KINDS if k.group == group})), ("get",))
            for group in sorted({k.group for k in READ_KINDS} - {CORE})
        ),  # a pod's owners, read when a pod names them (pods: above)
        EVENTS,
    ],
    "podgroup-controller": [
        rule(KAI, ("podgroups",), READ),
        rule(KAI, ("podgroups/status",), ("update", "patch")),
        rule(CORE, ("pods", "nodes"), READ),
        rule("scheduling.k8s.io", ("priorityclasses",), READ),
    ],
    "queue-controller": [
        rule(KAI, ("queues", "podgroups"), READ),  # a queue's status sums its PodGroups' resourcesStatus
        rule(KAI, ("queues/status",), ("update", "patch")),
    ],
    "admission": [
        rule(KAI, ("queues", "podgroups"), READ),  # a Queue's parent exists, no cycle; a resized pod's queues
        rule("scheduling.k8s.io", ("priorityclasses",), READ),  # a resized pod's PodGroup's preemptibility
        EVENTS,
    ],
}
"""Per component (its Deployment and ServiceAccount name), the cluster-wide rules of its ClusterRole."""


def role_name(component: str) -> str:
    return f"kai-{component}"


ROLE_NAMES = (*(role_name(component) for component in CLUSTER_RULES), monitoring.ROLE)
"""Every role the operator makes: the components', and its Prometheus' (``monitoring``)."""


def rbac_objects(settings: Settings, component: str, account: str) -> list[dict[str, Any]]:
    """The ServiceAccount, ClusterRole + binding and the Lease Role + binding of one component."""
    name, namespace = role_name(component), settings.namespace
    subject = [{"kind": "ServiceAccount", "name": account, "namespace": namespace}]
    role_ref = {"apiGroup": "rbac.authorization.k8s.io", "name": name}
    return [
        labelled("ServiceAccount", account, component, namespace),
        labelled("ClusterRole", name, component) | {"rules": CLUSTER_RULES[component]},
        labelled("ClusterRoleBinding", name, component)
        | {"subjects": subject, "roleRef": role_ref | {"kind": "ClusterRole"}},
        labelled("Role", name, component, namespace) | {"rules": [LEASES]},
        labelled("RoleBinding", name, component, namespace)
        | {"subjects": subject, "roleRef": role_ref | {"kind": "Role"}},
    ]
