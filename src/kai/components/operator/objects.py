"""What every object the operator renders carries: KAI's ``app`` label (the seed's ``kubectl logs -l app=...``
finds each component's pods by it), the managed-by label, and the API version of its kind."""

from typing import Any

from kai.cluster.kube.resources import kind_of

MANAGED_BY = ("app.kubernetes.io/managed-by", "kai-operator")


def labelled(kind: str, name: str, app: str, namespace: str | None = None) -> dict[str, Any]:
    metadata: dict[str, Any] = {"name": name, "labels": {"app": app, MANAGED_BY[0]: MANAGED_BY[1]}}
    if namespace is not None:
        metadata["namespace"] = namespace
    return {"apiVersion": kind_of(kind).api_version, "kind": kind, "metadata": metadata}


def owned_by(obj: dict[str, Any], owner: dict[str, Any]) -> dict[str, Any]:
    """``obj`` with ``owner`` (a Config or SchedulingShard) as its controller: the garbage collector removes it with
    its owner (a deleted shard takes its scheduler with it)."""
    meta = owner.get("metadata") or {}
    reference = {
        "apiVersion": owner.get("apiVersion", "kai.scheduler/v1"),
        "kind": owner.get("kind", ""),
        "name": meta.get("name", ""),
        "uid": meta.get("uid", ""),
        "controller": True,
        "blockOwnerDeletion": False,
    }
    obj["metadata"]["ownerReferences"] = [reference]
    return obj


def key_of(obj: dict[str, Any]) -> str:
    """The port's key of an object: ``namespace/name``, or ``name`` for a cluster-scoped one."""
    meta = obj["metadata"]
    return f"{meta['namespace']}/{meta['name']}" if meta.get("namespace") else str(meta["name"])


def made_by_kai(obj: dict[str, Any] | None) -> bool:
    """Whether the operator made ``obj`` (its managed-by label): only those it ever deletes."""
    labels = ((obj or {}).get("metadata") or {}).get("labels") or {}
    return bool(labels.get(MANAGED_BY[0]) == MANAGED_BY[1])
