"""The PodGroups of a workload (``kai explain pytorchjob bert``): users know their workload's name, not the
``pg-<name>-<uid>`` the pod-grouper gave its PodGroup.

A PodGroup the pod-grouper made is owned by the workload at the top of its pods' owner chain (a Deployment's pods
each own theirs, a CronJob's Jobs theirs); so a workload's PodGroups are the ones it owns, else the ones of the pods
it owns, else (a Deployment) the ones of the pods of its ReplicaSets, named ``<deployment>-<pod-template-hash>``,
or (a CronJob) the ones its Jobs own.
"""

import difflib
from collections.abc import Iterable

from kai.cluster.port import ClusterClient, Raw
from kai.components.sim.workload_makers import namespaced_kinds
from kai.core.model import names

SHORT_NAMES = {
    "deploy": "deployment",
    "sts": "statefulset",
    "rs": "replicaset",
    "lws": "leaderworkerset",
    "cj": "cronjob",
}
"""kubectl's short names of workload kinds."""


def workload_kind(text: str) -> str:
    """The kind a user typed (``PyTorchJob``, ``pytorchjobs``, ``deploy``), lower-case and singular."""
    kind = text.lower()
    kind = SHORT_NAMES.get(kind, kind)
    return kind[:-1] if kind.endswith("s") and not kind.endswith("ss") else kind


def unknown_kind(text: str) -> str | None:
    """Why ``text`` names no workload kind kai knows, with the nearest one; None when it knows it."""
    kind = workload_kind(text)
    known = {known.lower() for known in namespaced_kinds()} | set(SHORT_NAMES)
    if kind in known:
        return None
    close = difflib.get_close_matches(kind, sorted(known), n=1)
    return f"kai knows no workload kind {text}" + (f"; did you mean {close[0]}?" if close else "")


def nearest_workload(cluster: ClusterClient, kind: str, namespace: str, name: str) -> str | None:
    """The name of a workload of ``kind`` in ``namespace`` (as its PodGroups' and pods' owners name it) most like
    ``name``; None when none is."""
    owners = {
        str(ref.get("name"))
        for obj in (*cluster.list("PodGroup"), *cluster.list("Pod"))
        if _in(obj, namespace)
        for ref in obj["metadata"].get("ownerReferences") or []
        if isinstance(ref, dict) and str(ref.get("kind", "")).lower() == kind
    }
    close = difflib.get_close_matches(name, sorted(owners), n=1)
    return close[0] if close else None


def workload_podgroups(cluster: ClusterClient, kind: str, namespace: str, name: str) -> list[str]:
    """Keys of the PodGroups of the workload ``kind`` (as ``workload_kind`` gives it) ``namespace/name``, sorted."""
    jobs = (
        {job["metadata"]["name"] for job in cluster.list("Job") if _in(job, namespace) and _owned_by(job, kind, name)}
        if kind == "cronjob"
        else set()
    )
    owned = {
        f"{namespace}/{pg['metadata']['name']}"
        for pg in cluster.list("PodGroup")
        if _in(pg, namespace) and (_owned_by(pg, kind, name) or any(_owned_by(pg, "job", job) for job in jobs))
    }
    if owned:
        return sorted(owned)
    pods = [pod for pod in cluster.list("Pod") if _in(pod, namespace)]
    return sorted(_podgroups_of(pod for pod in pods if _owned_by(pod, kind, name) or _of_deployment(pod, kind, name)))


def workload_of(cluster: ClusterClient, podgroup_key: str) -> str | None:
    """``Kind/name`` of the workload that owns the PodGroup (the pod-grouper's owner), None when none does."""
    podgroup = cluster.get("PodGroup", podgroup_key)
    refs = (podgroup or {}).get("metadata", {}).get("ownerReferences") or []
    ref = refs[0] if refs and isinstance(refs[0], dict) else None
    return f"{ref.get('kind')}/{ref.get('name')}" if ref is not None else None


def _in(obj: Raw, namespace: str) -> bool:
    return bool(obj["metadata"].get("namespace") == namespace)


def _owned_by(obj: Raw, kind: str, name: str) -> bool:
    return any(
        isinstance(ref, dict) and str(ref.get("kind", "")).lower() == kind and ref.get("name") == name
        for ref in obj["metadata"].get("ownerReferences") or []
    )


def _of_deployment(pod: Raw, kind: str, name: str) -> bool:
    """A pod of one of the Deployment's ReplicaSets (``<deployment>-<hash>``, the hash on the pod's label)."""
    template_hash = (pod["metadata"].get("labels") or {}).get("pod-template-hash")
    return kind == "deployment" and bool(template_hash) and _owned_by(pod, "replicaset", f"{name}-{template_hash}")


def _podgroups_of(pods: Iterable[Raw]) -> set[str]:
    found = set()
    for pod in pods:
        group = (pod["metadata"].get("annotations") or {}).get(names.POD_GROUP_ANNOTATION)
        if group:
            found.add(f"{pod['metadata']['namespace']}/{group}")
    return found
