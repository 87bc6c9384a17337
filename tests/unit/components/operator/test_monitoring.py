"""kai operator, monitoring: the Config's ``spec.prometheus`` → metrics Services, ServiceMonitors and a Prometheus in
KAI's shape, on the embedded cluster; the CRDs of the Prometheus Operator present or not."""

import logging
from typing import Any

import pytest

from components.operator.test_operator import IMAGE, NS, Counting, condition, config, scheduler_config, shard
from kai.cluster.memory import MemoryCluster
from kai.components.operator import monitoring
from kai.components.operator.reconciler import Reconciler

COMPONENT_SERVICES = {
    "admission": "http-metrics",
    "binder": "http-metrics",
    "pod-grouper": "http-metrics",
    "podgroup-controller": "http-metrics",
    "queue-controller": "metrics",
    "kai-scheduler-default": "http-metrics",
}
"""Every component's metrics Service and the port a ServiceMonitor selects (KAI's names)."""


def crd(name: str) -> dict[str, Any]:
    status = {"conditions": [{"type": "Established", "status": "True"}]}
    return {"kind": "CustomResourceDefinition", "metadata": {"name": name}, "status": status}


OPERATOR_CRDS = (crd(monitoring.PROMETHEUS_CRD), crd(monitoring.SERVICE_MONITOR_CRD))


class Clock:
    def __init__(self) -> None:
        self.now = 1_800_000_000.0

    def __call__(self) -> float:
        return self.now


def reconciled(*objects: dict[str, Any], clock: Clock | None = None) -> Counting:
    cluster = Counting(list(objects))
    Reconciler(cluster, IMAGE, clock or Clock()).reconcile()
    return cluster


def names(cluster: MemoryCluster, kind: str) -> set[str]:
    return {o["metadata"]["name"] for o in cluster.list(kind)}


def test_every_component_has_a_metrics_service_with_kais_port_names():
    cluster = reconciled(config(), shard())
    for name, port in COMPONENT_SERVICES.items():
        service = cluster.get("Service", f"{NS}/{name}")
        assert service is not None, name
        assert service["spec"]["selector"] == {"app": name}
        metrics = [p for p in service["spec"]["ports"] if p["name"] == port]
        assert metrics == [{"protocol": "TCP", "name": port, "port": 8080, "targetPort": 8080}], name
    assert cluster.get("Service", f"{NS}/kai-scheduler-default")["metadata"]["annotations"] == {
        "prometheus.io/scrape": "true"
    }


def test_monitoring_off_makes_nothing_and_reads_nothing_of_the_prometheus_operator():
    cluster = reconciled(config(), shard())
    assert names(cluster, "ServiceMonitor") == names(cluster, "Prometheus") == set()
    assert condition(cluster, "Config", "kai-config", "DependenciesFulfilled")["status"] == "True"


def test_without_the_prometheus_operators_crds_the_config_says_so_once_and_the_rest_is_deployed(caplog):
    cluster = Counting([config({"prometheus": {"enabled": True}}), shard()])
    reconciler = Reconciler(cluster, IMAGE, Clock())
    with caplog.at_level(logging.WARNING, logger="kai.components.operator.reconciler"):
        for _ in range(3):
            reconciler.reconcile()
    missing = condition(cluster, "Config", "kai-config", "DependenciesFulfilled")
    assert (missing["status"], missing["reason"]) == ("False", "DependenciesMissing")
    assert missing["message"] == (
        "prometheus operator: spec.prometheus.enabled needs the CustomResourceDefinitions "
        "prometheuses.monitoring.coreos.com and servicemonitors.monitoring.coreos.com, not installed (install the "
        "Prometheus Operator); the rest of kai is deployed"
    )
    assert [r.message for r in caplog.records] == [f"Config kai-config: missing {missing['message']}"]
    assert condition(cluster, "Config", "kai-config", "Deployed")["status"] == "True"
    assert set(COMPONENT_SERVICES) <= names(cluster, "Deployment")
    assert names(cluster, "ServiceMonitor") == names(cluster, "Prometheus") == set()
    cluster.apply("CustomResourceDefinition", OPERATOR_CRDS[0])  # the Prometheus Operator is installed later
    cluster.apply("CustomResourceDefinition", OPERATOR_CRDS[1])
    reconciler.reconcile()
    assert names(cluster, "Prometheus") == {"prometheus"}
    assert condition(cluster, "Config", "kai-config", "DependenciesFulfilled")["status"] == "True"


def test_enabled_renders_kais_prometheus_its_account_rbac_and_usage_service():
    cluster = reconciled(config({"prometheus": {"enabled": True}}), shard(), *OPERATOR_CRDS)
    prometheus = cluster.get("Prometheus", f"{NS}/prometheus")
    assert prometheus["spec"] == {
        "podMetadata": {"labels": {"app": "prometheus"}},
        "retention": "2w",
        "scrapeInterval": "1m",
        "serviceAccountName": "prometheus",
        "serviceMonitorSelector": {"matchLabels": {"kai.scheduler/accounting": "true"}},
        "serviceMonitorNamespaceSelector": {},
        "ruleSelector": {"matchLabels": {"kai.scheduler/accounting": "true"}},
        "ruleNamespaceSelector": {},
        "storage": {
            "volumeClaimTemplate": {
                "spec": {
                    "storageClassName": "standard",
                    "accessModes": ["ReadWriteOnce"],
                    "resources": {"requests": {"storage": "50Gi"}},
                }
            }
        },
    }
    assert cluster.get("ServiceAccount", f"{NS}/prometheus") is not None
    role = cluster.get("ClusterRole", "kai-prometheus")
    assert role["rules"] == monitoring.PROMETHEUS_RULES
    binding = cluster.get("ClusterRoleBinding", "kai-prometheus")
    assert binding["subjects"] == [{"kind": "ServiceAccount", "name": "prometheus", "namespace": NS}]
    assert binding["roleRef"]["name"] == "kai-prometheus"
    usage = cluster.get("Service", f"{NS}/usage-prometheus")
    assert usage["spec"]["selector"] == {
        "app.kubernetes.io/instance": "prometheus",
        "app.kubernetes.io/name": "prometheus",
    }
    assert usage["spec"]["ports"] == [{"name": "web", "port": 9090, "protocol": "TCP"}]
    assert prometheus["metadata"]["ownerReferences"][0]["kind"] == "Config"


def test_each_service_monitor_selects_its_components_metrics_port():
    cluster = reconciled(config({"prometheus": {"enabled": True}}), shard(), *OPERATOR_CRDS)
    monitors = {m["metadata"]["name"]: m for m in cluster.list("ServiceMonitor")}
    assert set(monitors) == {*COMPONENT_SERVICES, "kube-state-metrics"}
    for name, port in COMPONENT_SERVICES.items():
        monitor = monitors[name]
        assert monitor["metadata"]["labels"]["kai.scheduler/accounting"] == "true"
        service = cluster.get("Service", f"{NS}/{name}")
        assert monitor["spec"]["namespaceSelector"] == {"matchNames": [NS]}
        assert monitor["spec"]["selector"]["matchLabels"].items() <= service["metadata"]["labels"].items()
        assert monitor["spec"]["jobLabel"] == "app" and service["metadata"]["labels"]["app"] == name
        assert monitor["spec"]["endpoints"] == [
            {
                "port": port,
                "interval": "30s",
                "scrapeTimeout": "10s",
                "bearerTokenFile": "/var/run/secrets/kubernetes.io/serviceaccount/token",
            }
        ]
    assert monitors["kube-state-metrics"]["spec"]["namespaceSelector"] == {"matchNames": ["monitoring", "default"]}
    assert monitors["kube-state-metrics"]["spec"]["selector"] == {
        "matchLabels": {"app.kubernetes.io/name": "kube-state-metrics"}
    }


def test_the_configs_values_reach_the_prometheus_and_the_service_monitors():
    spec = {
        "enabled": True,
        "instanceName": "usage",
        "retentionPeriod": "30d",
        "sampleInterval": "30s",
        "enablePersistentStorage": False,
        "serviceMonitor": {"interval": "15s", "scrapeTimeout": "5s"},
        "accountingLabelKey": "team",
        "accountingLabelValue": "kai",
    }
    cluster = reconciled(config({"prometheus": spec}), shard(), *OPERATOR_CRDS)
    prometheus = cluster.get("Prometheus", f"{NS}/usage")
    assert (prometheus["spec"]["retention"], prometheus["spec"]["scrapeInterval"]) == ("30d", "30s")
    assert "storage" not in prometheus["spec"]
    assert prometheus["spec"]["serviceMonitorSelector"] == {"matchLabels": {"team": "kai"}}
    monitor = cluster.get("ServiceMonitor", f"{NS}/binder")
    assert monitor["metadata"]["labels"]["team"] == "kai"
    assert (monitor["spec"]["endpoints"][0]["interval"], monitor["spec"]["endpoints"][0]["scrapeTimeout"]) == (
        "15s",
        "5s",
    )
    assert cluster.get("Service", f"{NS}/usage-prometheus")["spec"]["selector"]["app.kubernetes.io/instance"] == "usage"


def test_an_external_prometheus_needs_only_the_service_monitor_crd():
    cluster = reconciled(
        config({"prometheus": {"enabled": True, "externalPrometheusUrl": "http://mine:9090"}}), shard()
    )
    missing = condition(cluster, "Config", "kai-config", "DependenciesFulfilled")["message"]
    assert "CustomResourceDefinition servicemonitors.monitoring.coreos.com, not installed" in missing


def test_an_external_prometheus_gets_service_monitors_and_no_prometheus_of_ours():
    url = "http://prometheus-operated.monitoring.svc:9090"
    cluster = reconciled(
        config({"prometheus": {"enabled": True, "externalPrometheusUrl": url}}), shard(), *OPERATOR_CRDS
    )
    assert names(cluster, "Prometheus") == set()
    assert cluster.get("Service", f"{NS}/usage-prometheus") is None
    assert "binder" in names(cluster, "ServiceMonitor")
    assert condition(cluster, "Config", "kai-config", "DependenciesFulfilled")["status"] == "True"


def test_turning_service_monitors_off_removes_them():
    cluster = reconciled(config({"prometheus": {"enabled": True}}), shard(), *OPERATOR_CRDS)
    cluster.apply("Config", config({"prometheus": {"enabled": True, "serviceMonitor": {"enabled": False}}}))
    Reconciler(cluster, IMAGE, Clock()).reconcile()
    assert names(cluster, "ServiceMonitor") == set()
    assert "serviceMonitorSelector" not in cluster.get("Prometheus", f"{NS}/prometheus")["spec"]


def test_the_configs_available_waits_for_the_prometheus_it_asked_for():
    cluster = Counting([config({"prometheus": {"enabled": True}}), shard(), *OPERATOR_CRDS])
    reconciler = Reconciler(cluster, IMAGE, Clock())
    reconciler.reconcile()
    for deployment in cluster.list("Deployment"):
        status = {"observedGeneration": 0, "availableReplicas": 1}
        cluster.update_status("Deployment", deployment | {"status": status})
    assert reconciler.reconcile() is False
    available = condition(cluster, "Config", "kai-config", "Available")
    assert (available["status"], available["message"]) == ("False", f"not available yet: Prometheus {NS}/prometheus")
    prometheus = cluster.get("Prometheus", f"{NS}/prometheus")
    cluster.update_status(
        "Prometheus", prometheus | {"status": {"conditions": [{"type": "Available", "status": "True"}]}}
    )
    assert reconciler.reconcile() is True
    assert condition(cluster, "Config", "kai-config", "Ready")["status"] == "True"


def test_a_prometheus_no_longer_wanted_is_kept_for_its_retention_then_deleted():
    clock = Clock()
    cluster = Counting([config({"prometheus": {"enabled": True, "retentionPeriod": "1d"}}), shard(), *OPERATOR_CRDS])
    reconciler = Reconciler(cluster, IMAGE, clock)
    reconciler.reconcile()
    cluster.apply("Config", config({"prometheus": {"enabled": False, "retentionPeriod": "1d"}}))
    reconciler.reconcile()
    kept = cluster.get("Prometheus", f"{NS}/prometheus")
    assert kept["metadata"]["annotations"] == {monitoring.DEPRECATED: "2027-01-15T08:00:00Z"}
    assert names(cluster, "ServiceMonitor") == set()
    assert cluster.get("Service", f"{NS}/usage-prometheus") is None
    clock.now += 86400 - 60
    reconciler.reconcile()
    assert cluster.get("Prometheus", f"{NS}/prometheus")["metadata"]["annotations"] == kept["metadata"]["annotations"]
    clock.now += 120
    reconciler.reconcile()
    assert names(cluster, "Prometheus") == set()
    assert cluster.get("ServiceAccount", f"{NS}/prometheus") is None
    assert cluster.get("ClusterRole", "kai-prometheus") is None
    cluster.apply("Config", config({"prometheus": {"enabled": True}}))  # wanted again: made again at once
    reconciler.reconcile()
    assert "annotations" not in cluster.get("Prometheus", f"{NS}/prometheus")["metadata"]
    assert cluster.get("ClusterRole", "kai-prometheus") is not None


def test_a_prometheus_kai_did_not_make_is_left_alone():
    theirs = {"kind": "Prometheus", "metadata": {"name": "prometheus", "namespace": NS}, "spec": {"retention": "1y"}}
    cluster = reconciled(config(), shard(), *OPERATOR_CRDS, theirs)
    found = cluster.get("Prometheus", f"{NS}/prometheus")
    assert (found["spec"], found["metadata"].get("annotations")) == ({"retention": "1y"}, None)


@pytest.mark.parametrize(
    ("prometheus", "expected"),
    [
        ({"enabled": True}, f"http://usage-prometheus.{NS}.svc.cluster.local:9090"),
        ({"enabled": True, "externalPrometheusUrl": "http://mine:9090"}, "http://mine:9090"),
        ({"externalPrometheusUrl": "http://mine:9090"}, "http://mine:9090"),
    ],
)
def test_time_based_fair_share_reads_the_prometheus_the_config_names(prometheus, expected):
    usage = {"usageDBConfig": {"clientType": "prometheus"}}
    cluster = reconciled(config({"prometheus": prometheus}), shard("default", usage), *OPERATOR_CRDS)
    assert scheduler_config(cluster)["usageDBConfig"] == {"clientType": "prometheus", "connectionString": expected}


def test_a_shards_own_connection_string_wins_and_none_at_all_is_named_on_the_shard():
    own = {"usageDBConfig": {"clientType": "prometheus", "connectionString": "http://own:9090"}}
    cluster = reconciled(config({"prometheus": {"enabled": True}}), shard("default", own))
    assert scheduler_config(cluster)["usageDBConfig"]["connectionString"] == "http://own:9090"
    cluster = reconciled(config(), shard("default", {"usageDBConfig": {"clientType": "prometheus"}}))
    deployed = condition(cluster, "SchedulingShard", "default", "Deployed")
    assert deployed["reason"] == "InvalidConfiguration"
    assert "spec.usageDBConfig.connectionString" in deployed["message"]
    assert "spec.prometheus.enabled" in deployed["message"]


@pytest.mark.parametrize(
    ("spec", "field"),
    [
        ({"retentionPeriod": "two weeks"}, "spec.prometheus.retentionPeriod"),
        ({"serviceMonitor": {"interval": "30 s"}}, "spec.prometheus.serviceMonitor.interval"),
        ({"storageSize": "lots"}, "spec.prometheus.storageSize"),
    ],
)
def test_a_value_the_prometheus_operator_would_refuse_is_named_on_the_config(spec, field):
    cluster = reconciled(config({"prometheus": {"enabled": True, **spec}}), shard(), *OPERATOR_CRDS)
    deployed = condition(cluster, "Config", "kai-config", "Deployed")
    assert deployed["reason"] == "InvalidConfiguration" and field in deployed["message"]


class NoCrdRights(Counting):
    """A cluster whose API server refuses the operator the Prometheus Operator's CRDs (a chart without that rule)."""

    def get(self, kind: str, key: str) -> dict[str, Any] | None:
        if kind == "CustomResourceDefinition":
            raise PermissionError(f"customresourcedefinitions {key} is forbidden")
        return super().get(kind, key)


def test_crds_the_operator_may_not_read_count_as_missing_said_once(caplog):
    cluster = NoCrdRights([config({"prometheus": {"enabled": True}}), shard()])
    reconciler = Reconciler(cluster, IMAGE, Clock())
    with caplog.at_level(logging.WARNING, logger="kai.components.operator.reconciler"):
        reconciler.reconcile()
        reconciler.reconcile()
    refused = [r.message for r in caplog.records if "cannot read" in r.message]
    assert len(refused) == 2  # once per CRD, not per pass
    assert condition(cluster, "Config", "kai-config", "DependenciesFulfilled")["status"] == "False"
    assert condition(cluster, "Config", "kai-config", "Deployed")["status"] == "True"
