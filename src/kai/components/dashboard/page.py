"""The document one look gives the page (``/api/state``, and embedded in the first answer): the one view
(``kai.components.insight.view``, the numbers ``kai queues``, ``kai explain`` and ``kai simulate`` show for the same
input), the nodes, the last cycles and the history.

The page lists no pods (10,000 of them would be megabytes a refresh; the summary counts them), and each waiting
podgroup's reason comes with its text and the texts of its first few causes: the rest of the evidence stays on the
server (``kai explain -o json`` has the whole of it). Queues carry their display name (else their name), which
the view leaves out.
"""

from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from kai.components.dashboard.feeds import Feed
from kai.components.dashboard.nodes import node_columns
from kai.components.insight.build import build_view, with_fixes
from kai.components.insight.fixes.found import summary
from kai.components.insight.inspect import Inspection
from kai.components.insight.view import PendingView, View, summary_json, view_json

CAUSES = 6
"""Causes of a reason the page lists (the rest are counted)."""


def page_document(feed: Feed, ins: Inspection) -> dict[str, Any]:
    view = with_fixes(build_view(ins, feed.config_source), feed.fixes(ins))
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
        "pending": [
            _pending(row, shown_row, view.at) for row, shown_row in zip(view.pending, whole["pending"], strict=True)
        ],
    }


def _pending(row: PendingView, shown: Mapping[str, Any], now: float) -> dict[str, Any]:
    """The row's JSON with its fix in a listing's words (proven, or what it needs; ``kai explain`` has what the
    search tried) and its reason's first causes."""
    reason = shown["reason"]
    return {
        **{key: value for key, value in shown.items() if key not in ("reason", "needs", "fixes", "orderKey")},
        "reason": _reason(reason) if reason is not None else None,
        "fix": row.fix_text(now),
        "proven": bool(row.fixes is not None and row.fixes.proven),
        "fixSearch": summary(row.fixes, now) if row.fixes is not None else "",
    }


def _reason(reason: Mapping[str, Any]) -> dict[str, Any]:
    children = reason.get("children") or []
    return {
        "kind": reason["kind"],
        "text": reason["text"],
        "causes": [child["text"] for child in children[:CAUSES]],
        "moreCauses": max(0, len(children) - CAUSES),
    }
