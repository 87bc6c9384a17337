"""The document one look gives the page (``/api/state``, and embedded in the first answer): the one view
(``kai.components.insight.view``, the numbers ``kai queues``, ``kai explain`` and ``kai simulate`` show for the same
input), the nodes, the last cycles and the history.

The page lists no pods (10,000 of them would be megabytes a refresh; the summary counts them), and each waiting
podgroup's reason comes with its text and the texts of its first few causes: the rest of the evidence stays on the
server (``kai explain -o json`` has the whole of it). Queues carry their display name (else their name), which the view leaves out.
"""

from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from kai.components.dashboard.feeds import Feed
from kai.components.dashboard.nodes import node_columns
from kai.components.insight.build import build_view
from kai.components.insight.inspect import Inspection
from kai.components.insight.view import View, summary_json, view_json

CAUSES = 6
"""Causes of a reason the page lists (the rest are counted)."""


def page_document(feed: Feed, ins: Inspection) -> dict[str, Any]:
    view = build_view(ins, feed.config_source)
    document = view_document(view, ins)
    return {
        "view": document,
        "nodes": node_columns(ins.shown),
        "cycles": feed.cycles(ins),
        "history": feed.history(ins, document["queues"]).as_json(),
    }


def view_document(view: View, ins: Inspection) -> dict[str, Any]:
    """The view's JSON as the page takes it: its summary of every pod, but not the pods."""
    whole = view_json(replace(view, pods=()))
    shown = ins.shown.queues
    return {
        **{key: value for key, value in whole.items() if key != "pods"},
        "summary": summary_json(view.summary),
        "queues": [
            {**row, "displayName": shown[row["queue"]].name if row["queue"] in shown else row["queue"]}
            for row in whole["queues"]
        ],
        "pending": [_pending(row) for row in whole["pending"]],
    }


def _pending(row: Mapping[str, Any]) -> dict[str, Any]:
    reason = row["reason"]
    fix = row["nearestFix"]
    return {
        **{key: value for key, value in row.items() if key not in ("reason", "nearestFix", "provenFixes", "orderKey")},
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
