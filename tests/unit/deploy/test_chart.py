"""The Helm chart against the code it configures: the operator may create and bind exactly the roles and webhook
configurations the operator renders, the values schema accepts the seed's NVCF values and every default, and the
chart's CRDs are the generated ones (test_crd_compat). `helm lint` and the install itself: tests/e2e/test_install.py."""

import json
import re
from typing import Any

import yaml
from repo import REPO

from kai.cluster.memory import MemoryCluster
from kai.components.operator.rbac import ROLE_NAMES
from kai.components.operator.reconciler import Reconciler
from kai.components.operator.settings import Image
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
