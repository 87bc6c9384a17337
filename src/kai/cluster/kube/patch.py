"""Writing back a pruned view (a cached Pod or Node) without destroying what the view left out.

Components follow the port's read-modify-write pattern: ``get`` an object, change it, ``update`` or
``update_status`` it. For pods and nodes the cached object is a view (``decode``): a PUT of it would drop the
fields the view skipped (container statuses, pod IPs, images) or be refused (a pod's spec is immutable). So the
adapter turns such a write into a JSON merge patch (RFC 7386) of exactly what the caller changed relative to the
view it started from, conditional on that view's resourceVersion: a PUT's meaning, restricted to the view's fields.
"""

from collections.abc import Mapping
from typing import Any

from kai.cluster.port import Raw, merge_patch


def view_patch(base: Mapping[str, Any], obj: Mapping[str, Any], *, status: bool) -> Raw:
    """The patch for an ``update`` (everything but status) or an ``update_status`` (status only) of ``obj``, read
    as ``base``; conditional on ``obj``'s resourceVersion when it has one. Empty when nothing changed."""

    def part(o: Mapping[str, Any]) -> Raw:
        if status:
            return {"status": o.get("status") or {}}
        meta = {k: v for k, v in (o.get("metadata") or {}).items() if k != "resourceVersion"}
        return {**{k: v for k, v in o.items() if k != "status"}, "metadata": meta}

    patch = merge_patch(part(base), part(obj))
    version = (obj.get("metadata") or {}).get("resourceVersion")
    if patch and version:
        patch.setdefault("metadata", {})["resourceVersion"] = version
    return patch
