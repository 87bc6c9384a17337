"""Reading a pod's owners, and the other objects rules ask for, through the cluster port.

Owners are read on demand (a GET on a real API server), at most once per pass however many pods share them, so a
kind whose CRD is not installed costs nothing until a pod names it. The port names an owner kind by
``Kind.version.group`` (``hub.port_kinds``), unless it is one of kai's own kinds.

The walk follows the pod's first ownerReference, then each owner's only one, as KAI does: an owner that no longer
exists (or exists under another uid) is an error, an owner kai cannot read (a kind the port does not know, or one
RBAC forbids) ends the walk — an unknown kind still counts as the top owner, as its ownerReference describes it.
"""

import logging
from collections.abc import Callable, Iterable, Mapping

from kai.cluster.kube.errors import ApiError
from kai.cluster.port import ClusterClient, Raw
from kai.components.podgrouper.rules.hub import port_kinds
from kai.components.podgrouper.rules.model import Node, Obj, split_api_version
from kai.core.model.errors import InvalidObject

log = logging.getLogger(__name__)


FORBIDDEN = 403


class UnknownKind(Exception):
    """The cluster port cannot read this kind at all."""


class ClusterLookup:
    """Objects read through the port for one pass, each once (``Lookup`` for the rules)."""

    def __init__(self, cluster: ClusterClient, pods_in: Callable[[str], Iterable[Raw]]) -> None:
        self._cluster = cluster
        self._pods_in = pods_in
        self._cache: dict[tuple[str, str, str, str], Raw | None] = {}
        self._parsed: dict[tuple[str, str, str, str], Obj | None] = {}

    def read(self, api_version: str, kind: str, namespace: str, name: str) -> Raw | None:
        """The object, None when it does not exist; ``UnknownKind`` when no port kind name can hold it."""
        key = (api_version, kind, namespace, name)
        if key in self._cache:
            return self._cache[key]
        group = split_api_version(api_version)[0]
        found: Raw | None = None
        known = False
        for port_kind in port_kinds(api_version, kind):
            try:
                raw = self._cluster.get(port_kind, f"{namespace}/{name}")
            except ValueError:  # the kube adapter does not know the kind
                continue
            known = True
            if raw is not None and split_api_version(str(raw.get("apiVersion") or api_version))[0] == group:
                found = raw
                break
        if not known:
            raise UnknownKind(f"{api_version} {kind}")
        self._cache[key] = found
        return found

    def get(self, api_version: str, kind: str, namespace: str, name: str) -> Obj | None:
        key = (api_version, kind, namespace, name)
        if key not in self._parsed:
            raw = self.read(api_version, kind, namespace, name)
            self._parsed[key] = None if raw is None else Obj.parse(raw, kind, api_version, namespace)
        return self._parsed[key]

    def pods(self, namespace: str, labels: Mapping[str, str]) -> list[Obj]:
        """The namespace's pods that carry ``labels`` (pods too malformed to read are left out: they are reported
        when they are grouped themselves)."""
        matching = []
        for raw in self._pods_in(namespace):
            try:
                pod = Obj.parse(raw, "Pod", "v1", namespace)
            except InvalidObject:
                continue
            if all(pod.labels.get(k) == v for k, v in labels.items()):
                matching.append(pod)
        return matching


def owner_chain(pod: Obj, lookup: ClusterLookup, unknown: set[str]) -> tuple[Obj, ...]:
    """The pod's owners from its own owner up; ``unknown`` collects the kinds kai could not read."""
    owners: list[Obj] = []
    seen = {(pod.kind, pod.name)}
    refs, holder = pod.owner_refs[:1], pod
    while refs:
        if len(refs) > 1:
            kinds = ", ".join(f"{r.get('kind').text()} {r.get('name').text()}" for r in refs)
            raise InvalidObject(
                holder.ref, "metadata.ownerReferences", f"has {len(refs)} owners ({kinds}); at most one is supported"
            )
        ref = refs[0]
        api_version, kind, name = (_required(ref, key) for key in ("apiVersion", "kind", "name"))
        uid = ref.get("uid").text()
        try:
            owner = lookup.get(api_version, kind, pod.namespace, name)
        except UnknownKind:
            if kind not in unknown:
                unknown.add(kind)
                log.info("kai cannot read %s %s; its pods are grouped by their ownerReference alone", api_version, kind)
            raw = {"apiVersion": api_version, "metadata": {"name": name, "namespace": pod.namespace, "uid": uid}}
            owners.append(Obj.parse(raw, kind))
            break
        except ApiError as error:
            if error.code != FORBIDDEN:
                raise
            log.info("not allowed to read %s %s/%s; grouping by the owners below it", kind, pod.namespace, name)
            break
        if owner is None or owner.uid != uid:
            raise ref.invalid(f"names {kind} {pod.namespace}/{name} (uid {uid}), which does not exist")
        if (kind, name) in seen:
            raise ref.invalid(f"{kind} {pod.namespace}/{name} owns itself (the ownerReferences form a cycle)")
        seen.add((kind, name))
        owners.append(owner)
        refs, holder = owner.owner_refs, owner
    return tuple(owners)


def _required(ref: Node, key: str) -> str:
    value = ref.get(key).text()
    if not value:
        raise ref.get(key).invalid("is required")
    return value
