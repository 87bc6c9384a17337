"""The Helm chart against the code it configures: the operator may create and bind exactly the roles and webhook
configurations the operator renders, the values schema accepts the seed's NVCF values and every default, and the
chart's CRDs are the generated ones (test_crd_compat). `helm lint` and the install itself: tests/e2e/test_install.py."""

import json
import re
from typing import Any

import yaml
from prometheus_client import CollectorRegistry
from repo import REPO

from kai.cluster.memory import MemoryCluster
from kai.components.controllers.queue_status import QueueStatusController
from kai.components.controllers.status_totals import StatusTotals
from kai.components.operator.rbac import ROLE_NAMES
from kai.components.operator.reconciler import Reconciler
from kai.components.operator.settings import Image
from kai.components.shared.metrics import BinderMetrics, SchedulerMetrics
from kai.components.sim.scenario import STOCK_PRIORITY_CLASSES

CHART = REPO / "deploy" / "helm" / "kai-scheduler"


def _listed(template: str, variable: str) -> list[str]:
    found = re.search(rf"\${variable} := list ((?:\"[^\"]+\" ?)+)", (CHART / "templates" / template).read_text())
    assert found, f"{template} defines no ${variable}"
    return re.findall(r'"([^"]+)"', found.group(1))


def test_the_operator_may_escalate_and_bind_exactly_the_roles_it_renders():
    assert sorted(_listed("operator.yaml", "roles")) == sorted(ROLE_NAMES)


def test_the_operator_may_change_exactly_the_webhook_configurations_it_renders():
    config = {"apiVersion": "kai.scheduler/v1", "kind": "Config", "metadata": {"name": "kai-config"}, "spec": {}}
    cluster = MemoryCluster([config])
    Reconciler(cluster, Image("r")).reconcile()
    rendered = [
        c["metadata"]["name"]
        for kind in ("MutatingWebhookConfiguration", "ValidatingWebhookConfiguration")
        for c in cluster.list(kind)
    ]
    assert sorted(_listed("operator.yaml", "webhooks")) == sorted(rendered)


def _keys(values: Any, schema: dict[str, Any], path: str = "") -> list[str]:
    """Keys of ``values`` the schema does not declare (where it closes its objects)."""
    unknown = []
    if isinstance(values, dict) and schema.get("additionalProperties") is False:
        for key, value in values.items():
            if key not in schema["properties"]:
                unknown.append(f"{path}.{key}")
            else:
                unknown += _keys(value, schema["properties"][key], f"{path}.{key}")
    return unknown


def test_the_values_schema_declares_every_default_and_the_seeds_nvcf_values():
    schema = json.loads((CHART / "values.schema.json").read_text())
    for values_file in (CHART / "values.yaml", REPO / "examples" / "seed" / "nvcf-values.yaml"):
        assert _keys(yaml.safe_load(values_file.read_text()), schema) == [], values_file
    assert _keys({"scheduler": {"placementStrategy": "binpack", "bogus": 1}}, schema) == [".scheduler.bogus"]


def test_the_stock_priority_classes_kai_simulate_assumes_are_the_ones_the_chart_installs():
    """One truth for KAI's stock classes: the chart's template (plain YAML: it renders as written), the manifest
    deploy/priority-classes.yaml (the e2e tests apply it) and what ``kai simulate`` adds to plain manifests."""
    template = (CHART / "templates" / "priorityclasses.yaml").read_text()
    assert "{{" not in template
    assert (REPO / "deploy" / "priority-classes.yaml").read_text() == template
    installed = {pc["metadata"]["name"]: pc["value"] for pc in yaml.safe_load_all(template)}
    assert installed == STOCK_PRIORITY_CLASSES


# ------------------------------------------------------------------------------------------- dashboards


DASHBOARDS = sorted((CHART / "dashboards").glob("*.json"))
METRIC = re.compile(r"\b((?:kai|controller_runtime)_[a-z_]+)\b")


def _exported() -> set[str]:
    """Every series name kai's components export (a counter's ``_total``, a histogram's ``_bucket``/``_count``/
    ``_sum``), from the metric objects the components register."""
    registry = CollectorRegistry()
    SchedulerMetrics(registry)
    BinderMetrics(registry)
    cluster = MemoryCluster()
    QueueStatusController(cluster, StatusTotals(cluster), registry)
    names = set()
    for family in registry.collect():
        names.add(family.name)
        if family.type == "counter":
            names.add(f"{family.name}_total")
        if family.type == "histogram":
            names |= {f"{family.name}_bucket", f"{family.name}_count", f"{family.name}_sum"}
    return names


def test_the_dashboards_are_the_four_of_the_brief_with_unique_ids():
    boards = [json.loads(path.read_text()) for path in DASHBOARDS]
    assert [b["uid"] for b in boards] == ["kai-binding", "kai-gpu-nodes", "kai-queues", "kai-scheduler"]
    for board in boards:
        assert [p["id"] for p in board["panels"]] == list(range(1, len(board["panels"]) + 1))
        assert all(p["targets"] and all(t["expr"] for t in p["targets"]) for p in board["panels"])


def test_every_dashboard_query_reads_only_metrics_kai_exports():
    exported = _exported()
    for path in DASHBOARDS:
        board = json.loads(path.read_text())
        queries = [t["expr"] for p in board["panels"] for t in p["targets"]]
        queries += [v["query"]["query"] for v in board["templating"]["list"] if v["type"] == "query"]
        unknown = {name for query in queries for name in METRIC.findall(query)} - exported
        assert not unknown, f"{path.name} reads {sorted(unknown)}, which kai does not export"
