"""The document one look gives the page (``/api/state``, and embedded in the first answer): the view as the CLI
renders it, the nodes, the last cycles and the history.

The view's waiting podgroups carry their reasons with all evidence; the page shows each reason's text and the texts
of its first few causes, so the rest of the evidence stays on the server (10,000 pods would otherwise be megabytes a
refresh). ``kai explain -o json`` has the whole of it.
"""

from collections.abc import Mapping
from typing import Any

from kai.components.dashboard.feeds import Feed
from kai.components.dashboard.nodes import node_columns
from kai.components.dashboard.view_today import shown_session, view_document
from kai.components.insight.inspect import Inspection

CAUSES = 6
"""Causes of a reason the page lists (the rest are counted)."""


def page_document(feed: Feed, ins: Inspection) -> dict[str, Any]:
    view = view_document(ins, feed.config_source)
    return {
        "view": {**view, "pending": [_pending(row) for row in view["pending"]]},
        "nodes": node_columns(shown_session(ins)),
        "cycles": feed.cycles(ins),
        "history": feed.history(ins, view["queues"]).as_json(),
    }


def _pending(row: Mapping[str, Any]) -> dict[str, Any]:
    reason = row["reason"]
    fix = row["nearestFix"]
    return {
        **{key: row[key] for key in ("podgroup", "workload", "namespace", "queue", "state", "pods", "gpus")},
        **{key: row[key] for key in ("waitingSince", "position", "estimatedStart")},
        "reason": _reason(reason) if reason is not None else None,
        "nearestFix": fix["text"] if fix is not None else None,
        "provenFixes": [proven["text"] for proven in row["provenFixes"]],
    }


def _reason(reason: Mapping[str, Any]) -> dict[str, Any]:
    children = reason.get("children") or []
    return {
        "kind": reason["kind"],
        "text": reason["text"],
        "causes": [child["text"] for child in children[:CAUSES]],
        "moreCauses": max(0, len(children) - CAUSES),
    }
