"""The kinds kai reads and writes on a real API server, and every call to it as a plain ``Request`` value.

Building a call is pure: a builder turns (kind, object or key, options) into method, path, query and body, and only
``transport`` sends it. So paths, query parameters and the resume logic of watches are unit-tested without a server
(the lesson of lightkube's ``GenericClient.prepare_request``), and a batch of writes is just a list of values.

Keys are the port's: ``namespace/name`` for namespaced kinds, ``name`` for cluster-scoped ones.
"""

import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from kai.cluster.port import Raw, is_reporting

MERGE_PATCH = "application/merge-patch+json"
APPLY_PATCH = "application/apply-patch+yaml"
STRATEGIC_MERGE_PATCH = "application/strategic-merge-patch+json"


@dataclass(frozen=True, slots=True)
class Kind:
    """Where a kind lives in the API: group/version, plural (the URL segment) and scope."""

    name: str
    group: str
    version: str
    plural: str
    namespaced: bool
    optional: bool = False
    """Its API may not be served (a CRD of another project): a 404 is "no objects", not an error."""

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    def collection_path(self, namespace: str | None = None) -> str:
        """The collection URL: all namespaces when ``namespace`` is None (or the kind is cluster-scoped)."""
        root = f"/apis/{self.group}/{self.version}" if self.group else f"/api/{self.version}"
        if self.namespaced and namespace is not None:
            return f"{root}/namespaces/{namespace}/{self.plural}"
        return f"{root}/{self.plural}"

    def object_path(self, key: str, subresource: str = "") -> str:
        namespace, name = split_key(self, key)
        path = f"{self.collection_path(namespace)}/{name}"
        return f"{path}/{subresource}" if subresource else path


KINDS: dict[str, Kind] = {
    kind.name: kind
    for kind in (
        Kind("Pod", "", "v1", "pods", namespaced=True),
        Kind("Node", "", "v1", "nodes", namespaced=False),
        Kind("Event", "", "v1", "events", namespaced=True),
        Kind("ConfigMap", "", "v1", "configmaps", namespaced=True),
        Kind("Namespace", "", "v1", "namespaces", namespaced=False),
        Kind("PriorityClass", "scheduling.k8s.io", "v1", "priorityclasses", namespaced=False),
        Kind("Lease", "coordination.k8s.io", "v1", "leases", namespaced=True),
        Kind("Job", "batch", "v1", "jobs", namespaced=True),  # a CronJob's Jobs (kai explain)
        Kind("Queue", "scheduling.run.ai", "v2", "queues", namespaced=False),
        Kind("PodGroup", "scheduling.run.ai", "v2alpha2", "podgroups", namespaced=True),
        Kind("BindRequest", "scheduling.run.ai", "v1alpha2", "bindrequests", namespaced=True),
        Kind("Topology", "kai.scheduler", "v1alpha1", "topologies", namespaced=False),
        Kind("ResourceClaim", "resource.k8s.io", "v1", "resourceclaims", namespaced=True),
        Kind("ResourceSlice", "resource.k8s.io", "v1", "resourceslices", namespaced=False),
        Kind(
            "NodeResourceTopology", "topology.node.k8s.io", "v1alpha2", "noderesourcetopologies", False, optional=True
        ),
        Kind("PodDisruptionBudget", "policy", "v1", "poddisruptionbudgets", namespaced=True),
    )
}

INSTALL_KINDS: dict[str, Kind] = {
    kind.name: kind
    for kind in (
        Kind("Namespace", "", "v1", "namespaces", namespaced=False),
        Kind("Deployment", "apps", "v1", "deployments", namespaced=True),
        Kind("Service", "", "v1", "services", namespaced=True),
        Kind("EndpointSlice", "discovery.k8s.io", "v1", "endpointslices", namespaced=True),
        Kind("ServiceAccount", "", "v1", "serviceaccounts", namespaced=True),
        Kind("Secret", "", "v1", "secrets", namespaced=True),
        Kind("ClusterRole", "rbac.authorization.k8s.io", "v1", "clusterroles", namespaced=False),
        Kind("ClusterRoleBinding", "rbac.authorization.k8s.io", "v1", "clusterrolebindings", namespaced=False),
        Kind("Role", "rbac.authorization.k8s.io", "v1", "roles", namespaced=True),
        Kind("RoleBinding", "rbac.authorization.k8s.io", "v1", "rolebindings", namespaced=True),
        Kind(
            "MutatingWebhookConfiguration",
            "admissionregistration.k8s.io",
            "v1",
            "mutatingwebhookconfigurations",
            namespaced=False,
        ),
        Kind(
            "ValidatingWebhookConfiguration",
            "admissionregistration.k8s.io",
            "v1",
            "validatingwebhookconfigurations",
            namespaced=False,
        ),
        Kind("CustomResourceDefinition", "apiextensions.k8s.io", "v1", "customresourcedefinitions", namespaced=False),
        Kind("Config", "kai.scheduler", "v1", "configs", namespaced=False),
        Kind("SchedulingShard", "kai.scheduler", "v1", "schedulingshards", namespaced=False),
        Kind("ServiceMonitor", "monitoring.coreos.com", "v1", "servicemonitors", namespaced=True),
        Kind("Prometheus", "monitoring.coreos.com", "v1", "prometheuses", namespaced=True),
    )
}
"""What the install renders and reads: the operator's inputs (Config, SchedulingShard) and every object it keeps
(ServiceMonitor and Prometheus are the Prometheus Operator's)."""
KINDS.update(INSTALL_KINDS)


def kind_of(name: str) -> Kind:
    """One of kai's kinds by name, or a custom resource named ``Kind.version.group``: namespaced, its plural the kind
    in lower case + s (the pod-grouper reads the owner kinds it knows so: ``podgrouper.rules.hub``)."""
    known = KINDS.get(name)
    if known is not None:
        return known
    kind, _, rest = name.partition(".")
    version, _, group = rest.partition(".")
    if kind and version and group:
        return Kind(kind, group, version, kind.lower() + "s", namespaced=True)
    raise ValueError(f"unknown kind {name!r}; kai knows: {', '.join(sorted(KINDS))} and Kind.version.group")


def split_key(kind: Kind, key: str) -> tuple[str | None, str]:
    """``ns/name`` → (ns, name) for namespaced kinds, ``name`` → (None, name) for cluster-scoped ones."""
    namespace, sep, name = key.rpartition("/")
    if kind.namespaced and not (sep and namespace and name and "/" not in namespace):
        raise ValueError(f"{kind.name} key {key!r} must be 'namespace/name'")
    if not kind.namespaced and (sep or not name):
        raise ValueError(f"{kind.name} is cluster-scoped: key {key!r} must be a bare name")
    return (namespace or None), name


def object_key(kind: Kind, obj: Mapping[str, Any]) -> str:
    meta = obj.get("metadata") or {}
    name = meta.get("name") or ""
    if not name:
        raise ValueError(f"{kind.name} object has no metadata.name")
    if kind.namespaced:
        namespace = meta.get("namespace") or ""
        if not namespace:
            raise ValueError(f"{kind.name} {name} has no metadata.namespace")
        return sys.intern(f"{namespace}/{name}")  # one string for the informer's store and its listeners' keys
    return str(name)


@dataclass(frozen=True, slots=True)
class Request:
    """One API call, not yet sent. ``accept`` holds the Status reasons that mean "already done" (idempotency)."""

    method: str
    path: str
    params: Mapping[str, str] = field(default_factory=dict)
    body: Raw | None = None
    content_type: str = "application/json"
    accept: frozenset[str] = frozenset()
    report: bool = field(default_factory=is_reporting)
    """Made inside ``port.reporting()`` (by the thread that built it): a write no decision waits for."""


# ------------------------------------------------------------------------------------------- reads


def list_request(
    kind: Kind, *, limit: int, continue_token: str = "", namespace: str | None = None, from_cache: bool = False
) -> Request:
    """One page of a LIST; the first page (no token) is a consistent read, or with ``from_cache`` whatever the API
    server's watch cache holds (``resourceVersion=0``: client-go's reflector's first list), which it serves without
    reading etcd and in one answer, whatever the limit (at 140,000 pods: 6-8 CPU s of the server instead of 15-16)."""
    params = {"limit": str(limit)}
    if continue_token:
        params["continue"] = continue_token
    elif from_cache:
        params["resourceVersion"] = "0"
    return Request("GET", kind.collection_path(namespace), params)


def watch_request(kind: Kind, resource_version: str, *, timeout_s: int, namespace: str | None = None) -> Request:
    """A WATCH from ``resource_version`` with bookmarks, which the server ends after ``timeout_s``."""
    params = {
        "watch": "true",
        "resourceVersion": resource_version,
        "allowWatchBookmarks": "true",
        "timeoutSeconds": str(timeout_s),
    }
    return Request("GET", kind.collection_path(namespace), params)


def get_request(kind: Kind, key: str) -> Request:
    return Request("GET", kind.object_path(key))


# ------------------------------------------------------------------------------------------- writes


def _write_params(field_manager: str) -> dict[str, str]:
    return {"fieldManager": field_manager} if field_manager else {}


def _typed(kind: Kind, obj: Raw) -> Raw:
    return {**obj, "apiVersion": kind.api_version, "kind": kind.name}


def create_request(kind: Kind, obj: Raw, *, idempotent: bool = False, field_manager: str = "") -> Request:
    """POST to the object's collection; with ``idempotent`` an existing object counts as created."""
    namespace, _ = split_key(kind, object_key(kind, obj))
    accept = frozenset({"AlreadyExists"}) if idempotent else frozenset()
    return Request(
        "POST", kind.collection_path(namespace), _write_params(field_manager), _typed(kind, obj), accept=accept
    )


def update_request(kind: Kind, obj: Raw, *, field_manager: str = "") -> Request:
    """PUT of the whole object; its metadata.resourceVersion makes it conditional (409 Conflict when stale)."""
    return Request("PUT", kind.object_path(object_key(kind, obj)), _write_params(field_manager), _typed(kind, obj))


def status_update_request(kind: Kind, obj: Raw, *, field_manager: str = "") -> Request:
    """PUT of the whole object to the status subresource: replaces ``status``, conditional like ``update_request``."""
    path = kind.object_path(object_key(kind, obj), "status")
    return Request("PUT", path, _write_params(field_manager), _typed(kind, obj))


def delete_request(kind: Kind, key: str, *, grace_period_s: int | None = None) -> Request:
    """DELETE; a missing object counts as deleted. ``grace_period_s=0`` removes a pod at once (no kubelet needed)."""
    params = {} if grace_period_s is None else {"gracePeriodSeconds": str(grace_period_s)}
    return Request("DELETE", kind.object_path(key), params, accept=frozenset({"NotFound"}))


def patch_request(
    kind: Kind,
    key: str,
    patch: Raw,
    *,
    subresource: str = "",
    strategic: bool = False,
    field_manager: str = "",
) -> Request:
    """A JSON merge patch (or a strategic one, for built-in kinds: lists such as conditions merge by key)."""
    content_type = STRATEGIC_MERGE_PATCH if strategic else MERGE_PATCH
    params = _write_params(field_manager)
    return Request("PATCH", kind.object_path(key, subresource), params, patch, content_type)


def status_patch_request(
    kind: Kind, key: str, status: Raw, *, strategic: bool = False, field_manager: str = ""
) -> Request:
    """Patch ``status`` through the status subresource (the only way to write it on kinds that have one)."""
    return patch_request(
        kind, key, {"status": status}, subresource="status", strategic=strategic, field_manager=field_manager
    )


def apply_request(kind: Kind, obj: Raw, *, field_manager: str) -> Request:
    """Server-side apply of the whole desired object: the fields ``field_manager`` set before and no longer sets are
    removed, fields other managers own are kept, and conflicts are forced (the caller owns this object)."""
    params = {"fieldManager": field_manager, "force": "true"}
    return Request("PATCH", kind.object_path(object_key(kind, obj)), params, _typed(kind, obj), APPLY_PATCH)


def binding_request(
    namespace: str,
    name: str,
    node: str,
    *,
    uid: str = "",
    field_manager: str = "",
    annotations: Mapping[str, str] | None = None,
) -> Request:
    """POST pods/binding: what a scheduler's bind is (sets spec.nodeName; the API refuses a second bind, and with
    ``uid`` a bind of a pod re-created under the same name: 409 Conflict). The API server copies the Binding's
    ``annotations`` onto the pod in the same write."""
    pod = KINDS["Pod"]
    meta: Raw = {"name": name, "namespace": namespace}
    if uid:
        meta["uid"] = uid
    if annotations:
        meta["annotations"] = dict(annotations)
    body: Raw = {
        "apiVersion": "v1",
        "kind": "Binding",
        "metadata": meta,
        "target": {"apiVersion": "v1", "kind": "Node", "name": node},
    }
    return Request("POST", pod.object_path(f"{namespace}/{name}", "binding"), _write_params(field_manager), body)


def eviction_request(namespace: str, name: str, *, dry_run: bool = False, field_manager: str = "") -> Request:
    """POST pods/eviction (policy/v1 Eviction): the API server deletes the pod if its PodDisruptionBudget allows it
    (429 otherwise); a pod already gone counts as evicted. ``dry_run``: it only judges."""
    params = dict(_write_params(field_manager))
    if dry_run:
        params["dryRun"] = "All"
    body: Raw = {"apiVersion": "policy/v1", "kind": "Eviction", "metadata": {"name": name, "namespace": namespace}}
    path = KINDS["Pod"].object_path(f"{namespace}/{name}", "eviction")
    return Request("POST", path, params, body, accept=frozenset({"NotFound"}))


def event_request(
    involved_kind: Kind,
    involved: Raw,
    *,
    reason: str,
    message: str,
    event_type: str,
    component: str,
    now: str,
    suffix: str,
) -> Request:
    """A core/v1 Event about ``involved`` (what ``kubectl describe`` lists). ``now`` is RFC 3339; ``suffix`` makes
    the name unique (client-go uses the time in hex). Events of cluster-scoped objects go to ``default``.

    core/v1 rather than events.k8s.io/v1: both APIs serve the same objects, and core/v1 is the one whose fields
    (involvedObject, source, count) ``kubectl describe`` prints and the components already write."""
    meta = involved.get("metadata") or {}
    name = str(meta.get("name", ""))
    namespace = str(meta.get("namespace") or "default")
    reference: Raw = {"apiVersion": involved_kind.api_version, "kind": involved_kind.name, "name": name}
    for source, target in (("namespace", "namespace"), ("uid", "uid"), ("resourceVersion", "resourceVersion")):
        if meta.get(source):
            reference[target] = meta[source]
    event: Raw = {
        "metadata": {"name": f"{name}.{suffix}", "namespace": namespace},
        "involvedObject": reference,
        "reason": reason,
        "message": message,
        "type": event_type,
        "source": {"component": component},
        "reportingComponent": component,
        "firstTimestamp": now,
        "lastTimestamp": now,
        "count": 1,
    }
    return create_request(KINDS["Event"], event)
