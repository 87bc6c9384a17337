"""Monitoring as KAI's users run it, on the test cluster: `helm upgrade -i kai-scheduler <chart> -n kai-scheduler
--create-namespace --set prometheus.enabled=true`.

Without the Prometheus Operator's CRDs the Config says why and the rest of kai runs; once they are installed the
operator renders a Prometheus in KAI's shape, a ServiceMonitor per component and their metrics Services. A real
Prometheus (monitoring_support.py: the scrape jobs the Prometheus Operator would generate from those ServiceMonitors,
pointed at the components running on the host) scrapes kai while a workload runs, and every panel query of the
shipped Grafana dashboards returns data; time-based fair share (clientType prometheus, the URL from the Config, as KAI
wires it) reads it; `kai doctor` checks that every component is scraped.

The tests run in order on one install (module fixture); each makes sure what it needs happened (CRDs, components,
Prometheus, workload), so one can also run alone.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from controlplane import REPO, ControlPlane, install_crds
from drill_support import delete_nodes, get, make_nodes
from install_support import COMPONENTS, NAMESPACE, SCHEDULER, TIMEOUT_S, Install, adopt, team_queues, workload_pod
from kai_support import Kai, kubectl_json
from kube.kube_support import wait_until
from monitoring_support import (
    DASHBOARDS,
    OPERATOR_CRDS,
    Prometheus,
    operator_crds,
    panel_queries,
    scrape_jobs,
    start_prometheus,
    variable_queries,
)
from prometheus_client.parser import text_string_to_metric_families
from testcluster import KubeStateMetrics, Kwok, start_kube_state_metrics

OPERATOR = "kai-operator"
METRICS_SERVICES = {
    "admission": "http-metrics",
    "binder": "http-metrics",
    "pod-grouper": "http-metrics",
    "podgroup-controller": "http-metrics",
    "queue-controller": "metrics",
    SCHEDULER: "http-metrics",
}
"""Every component's metrics Service and the port its ServiceMonitor selects (KAI's names)."""
MONITORING = "/apis/monitoring.coreos.com/v1/namespaces/" + NAMESPACE
POOLS = ("p", "q", "r")
"""One 8-GPU node each: p and r for the preemptions, q for the pods that run or wait."""
QUEUE_GPU_QUOTA = 16
"""Room for the two non-preemptible 8-GPU pods."""
HELD_GPUS = 18
"""What the workload's queue holds once both preemptions are done: run-0 (2) and the two 8-GPU pods."""
KSM_NAMESPACE = "monitoring"
"""Where KAI's kube-state-metrics ServiceMonitor looks for it (with "default"), as kube-prometheus-stack installs it."""


def metric(port: int, name: str, **labels: str) -> float:
    """A sample's value on a component's /metrics (0 when it has none yet)."""
    code, text = Kai.get(port, "/metrics")
    for family in text_string_to_metric_families(text if code == 200 else ""):
        for sample in family.samples:
            if sample.name == name and sample.labels == labels:
                return float(sample.value)
    return 0.0


def condition(cp: ControlPlane, kind: str) -> dict[str, Any]:
    conditions = (get(cp, "/apis/kai.scheduler/v1/configs/kai-config").get("status") or {}).get("conditions") or []
    return next((c for c in conditions if c["type"] == kind), {})


class Monitored:
    """The install with monitoring on, and what the tests add to it, each step done once."""

    def __init__(self, cp: ControlPlane, kwok: Kwok, workdir: Path) -> None:
        self.cp, self.kwok, self.workdir = cp, kwok, workdir
        self.install = Install(cp, kwok, workdir)
        self.prometheus: Prometheus | None = None
        self.ksm: KubeStateMetrics | None = None
        self.tag = uuid.uuid4().hex[:6]
        self.namespace, self.queue = f"mon-{self.tag}", f"mon-{self.tag}"
        self.workload_started = 0.0
        self.external = False

    def crds(self) -> None:
        if self.cp.kubectl("get", "crd", *OPERATOR_CRDS, check=False).returncode != 0:
            install_crds(self.cp, operator_crds())

    def running(self) -> None:
        """The components on the host, as their Deployments say (admission first: its webhooks see every pod)."""
        if "admission" not in self.install.host:
            self.install.serve_admission()
        for name in (*COMPONENTS, SCHEDULER):
            if name not in self.install.host:
                self.install.run_on_host(name)

    def host_ports(self) -> dict[str, int]:
        ports = {name: c.ports["--metrics-bind-address"] for name, c in self.install.host.items() if name != OPERATOR}
        return ports | ({"kube-state-metrics": self.ksm.port} if self.ksm is not None else {})

    def scraped(self) -> Prometheus:
        """kube-state-metrics and a Prometheus scraping what the ServiceMonitors select, every target up."""
        if self.prometheus is not None:
            return self.prometheus
        self.running()
        self.crds()
        wait_until(
            "the operator's ServiceMonitors", lambda: len(self.monitors()) == len(METRICS_SERVICES) + 1, TIMEOUT_S
        )
        (self.workdir / "kube-state-metrics").mkdir(exist_ok=True)
        self.ksm = start_kube_state_metrics(self.cp, self.workdir / "kube-state-metrics")
        self.cp.apply(
            {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": KSM_NAMESPACE}},
            {
                "apiVersion": "v1",
                "kind": "Service",
                "metadata": {
                    "name": "kube-state-metrics",
                    "namespace": KSM_NAMESPACE,
                    "labels": {"app.kubernetes.io/name": "kube-state-metrics"},
                },
                "spec": {"ports": [{"name": "http", "port": 8080}]},
            },
        )  # as its chart names it; the process runs on the host
        self.prometheus = start_prometheus(self.cp, self.workdir, self.jobs())
        self.wait_all_up()
        return self.prometheus

    def jobs(self) -> list[dict[str, Any]]:
        return scrape_jobs(self.cp, NAMESPACE, self.host_ports())

    def rescrape(self) -> None:
        """After a component restarted (on a new port)."""
        assert self.prometheus is not None
        self.prometheus.reload(self.jobs())
        self.wait_all_up()

    def wait_all_up(self) -> None:
        assert self.prometheus is not None
        prometheus, wanted = self.prometheus, {*METRICS_SERVICES, "kube-state-metrics"}

        def all_up() -> bool:
            """One target per job, up: a target a reload dropped is marked stale a scrape interval or two later."""
            jobs = [(s["metric"]["job"], s["value"][1]) for s in prometheus.query("up")]
            return sorted(job for job, value in jobs if job in wanted) == sorted(wanted) and all(
                value == "1" for job, value in jobs if job in wanted
            )

        wait_until("every scrape target to be up", all_up, TIMEOUT_S)

    def monitors(self) -> dict[str, dict[str, Any]]:
        status, body = self.cp.request(f"{MONITORING}/servicemonitors")
        return {m["metadata"]["name"]: m for m in body.get("items") or []} if status == 200 else {}

    def worked(self) -> None:
        """A workload that leaves a mark on every panel: pods bound in a queue, a pod too large for any node pending,
        and two preemptions (two preemptible 4-GPU pods give way to a non-preemptible 8-GPU pod: a victim search,
        its first scenario too small). Twice, since a labelled series starts at its first event, and a rate (the
        search duration's quantiles) shows only what came after."""
        if self.workload_started:
            return
        self.running()
        self.workload_started = time.time()
        cp, ns, tag = self.cp, self.namespace, self.tag
        cp.kubectl("create", "namespace", ns)
        for pool in POOLS:
            make_nodes(cp, f"mon-{tag}-{pool}", 1, gpus=8)
        self.apply(*team_queues(f"{self.queue}-parent", self.queue, QUEUE_GPU_QUOTA))

        def pod(name: str, pool: str, priority: str, gpus: int) -> dict[str, Any]:
            return workload_pod(ns, name, self.queue, f"mon-{tag}-{pool}", priority, {"nvidia.com/gpu": str(gpus)})

        self.apply(pod("run-0", "q", "train", 2), pod("huge", "q", "train", 16))
        for pool in ("p", "r"):
            self.apply(pod(f"low-{pool}-a", pool, "train", 4), pod(f"low-{pool}-b", pool, "train", 4))
            for name in ("run-0", f"low-{pool}-a", f"low-{pool}-b"):
                self.running_pod(name)
            self.apply(pod(f"high-{pool}", pool, "inference", 8))
            self.running_pod(f"high-{pool}")

    def apply(self, *documents: dict[str, Any]) -> None:
        path = self.workdir / f"{uuid.uuid4().hex[:6]}.yaml"
        path.write_text(yaml.safe_dump_all(documents))
        self.cp.kubectl("apply", "-f", str(path))

    def running_pod(self, name: str) -> None:
        seen: dict[str, Any] = {}

        def found() -> bool:
            pods = {
                p["metadata"]["name"]: p for p in kubectl_json(self.cp, "get", "pods", "-n", self.namespace)["items"]
            }
            seen.update(pods.get(name) or {})
            return (pods.get(name) or {}).get("status", {}).get("phase") == "Running"

        try:
            wait_until(f"pod {name} to run", found, TIMEOUT_S)
        except AssertionError as error:
            raise AssertionError(f"{error}: {seen.get('status')}") from None

    def use_external(self) -> None:
        """The harness Prometheus as the Config's externalPrometheusUrl (as a user points kai at theirs)."""
        prometheus = self.scraped()
        if not self.external:
            self.install.helm_install(
                "--set", "prometheus.enabled=true", "--set", f"prometheus.externalPrometheusUrl={prometheus.url}"
            )
            self.external = True

    def doctor(self, *args: str) -> tuple[int, list[tuple[str, str]]]:
        """`kai doctor -o json`'s exit status and its metrics findings (level, message)."""
        argv = [sys.executable, "-m", "kai", "doctor", f"--kubeconfig={self.cp.kubeconfig_path}", "-o", "json", *args]
        done = subprocess.run(argv, capture_output=True, text=True, timeout=120, check=False, cwd=REPO)
        assert done.returncode in (0, 1) and "Traceback" not in done.stderr, done.stdout + done.stderr
        report = json.loads(done.stdout)
        return done.returncode, [(f["level"], f["message"]) for f in report["findings"] if f["check"] == "metrics"]

    def stop(self) -> None:
        for part in (self.prometheus, self.ksm):
            if part is not None:
                part.stop()
        if self.workload_started:
            self.cp.clear_namespace(self.namespace)
            self.cp.kubectl(
                "delete", "queue", self.queue, f"{self.queue}-parent", "--ignore-not-found", "--wait=false", check=False
            )
            for pool in POOLS:
                delete_nodes(self.cp, f"mon-{self.tag}-{pool}")
        self.install.stop()
        self.cp.kubectl("delete", "schedulingshard", "default", "--ignore-not-found", check=False)  # its usage config
        self.cp.kubectl(
            "delete", "service", "kube-state-metrics", "-n", KSM_NAMESPACE, "--ignore-not-found", check=False
        )
        self.cp.kubectl("delete", "crd", *OPERATOR_CRDS, "--ignore-not-found", check=False)


@pytest.fixture(scope="module")
def monitored(control_plane: ControlPlane, kwok: Kwok, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Monitored]:
    """The seed's install with `--set prometheus.enabled=true`, on a cluster without the Prometheus Operator's CRDs,
    and its operator on the host."""
    cp = control_plane
    cp.kubectl("delete", "crd", *OPERATOR_CRDS, "--ignore-not-found")
    cp.kubectl("delete", "schedulingshard", "default", "--ignore-not-found")  # kept by helm: another install's values
    adopt(cp)
    setup = Monitored(cp, kwok, tmp_path_factory.mktemp("monitoring"))
    try:
        setup.install.helm_install("--set", "prometheus.enabled=true")
        setup.install.run_on_host(OPERATOR)
        yield setup
    finally:
        setup.stop()


def test_without_the_prometheus_operators_crds_the_config_says_why_and_kai_is_deployed(monitored: Monitored) -> None:
    cp = monitored.cp
    assert cp.kubectl("get", "crd", OPERATOR_CRDS[0], check=False).returncode != 0, "the CRDs were installed before"
    missing = wait_until(
        "the Config to say what is missing", lambda: condition(cp, "DependenciesFulfilled") or None, TIMEOUT_S
    )
    assert (missing["status"], missing["reason"]) == ("False", "DependenciesMissing")
    assert (
        "needs the CustomResourceDefinitions prometheuses.monitoring.coreos.com and servicemonitors"
        in (missing["message"])
    )
    monitored.running()  # the default queues are written once the Queue webhook answers
    wait_until("the Config to be Deployed", lambda: condition(cp, "Deployed").get("status") == "True", TIMEOUT_S)
    for name, port in METRICS_SERVICES.items():
        service = monitored.install.service(name)
        assert port in {p["name"] for p in service["spec"]["ports"]}, f"{name}: {service['spec']['ports']}"
        assert service["spec"].get("selector") == {"app": name}


def test_with_the_crds_the_operator_renders_kais_prometheus_service_monitors_and_services(
    monitored: Monitored,
) -> None:
    cp = monitored.cp
    monitored.crds()

    def rendered() -> dict[str, Any] | None:
        status, body = cp.request(f"{MONITORING}/prometheuses/prometheus")
        return dict(body) if status == 200 else None

    prometheus = wait_until("the operator to render the Prometheus", rendered, TIMEOUT_S)
    spec = prometheus["spec"]
    assert (spec["serviceAccountName"], spec["retention"], spec["scrapeInterval"]) == ("prometheus", "2w", "1m")
    assert spec["serviceMonitorSelector"] == {"matchLabels": {"kai.scheduler/accounting": "true"}}
    assert spec["storage"]["volumeClaimTemplate"]["spec"]["resources"]["requests"]["storage"] == "50Gi"
    monitors = wait_until(
        "a ServiceMonitor per component",
        lambda: monitored.monitors() if len(monitored.monitors()) == len(METRICS_SERVICES) + 1 else None,
        TIMEOUT_S,
    )
    assert set(monitors) == {*METRICS_SERVICES, "kube-state-metrics"}
    for name, port in METRICS_SERVICES.items():
        monitor, service = monitors[name], monitored.install.service(name)
        assert monitor["metadata"]["labels"]["kai.scheduler/accounting"] == "true"
        assert monitor["spec"]["selector"]["matchLabels"].items() <= service["metadata"]["labels"].items()
        assert monitor["spec"]["endpoints"][0]["port"] == port
    assert get(cp, f"/api/v1/namespaces/{NAMESPACE}/serviceaccounts/prometheus")
    usage = get(cp, f"/api/v1/namespaces/{NAMESPACE}/services/usage-prometheus")
    assert usage["spec"]["ports"][0]["port"] == 9090
    account = f"--as=system:serviceaccount:{NAMESPACE}:prometheus"
    assert (
        cp.kubectl("auth", "can-i", "list", "endpointslices.discovery.k8s.io", account, check=False).stdout.strip()
        == "yes"
    )
    wait_until(
        "the dependency to be fulfilled",
        lambda: condition(cp, "DependenciesFulfilled").get("status") == "True",
        TIMEOUT_S,
    )
    said = monitored.install.host[OPERATOR].log.read_text().count("missing prometheus operator")
    assert said == 1, f"the operator said the CRDs were missing {said} times, once expected"
    for path in sorted(DASHBOARDS.glob("*.json")):
        name = "kai-dashboard-" + path.stem.removeprefix("kai-")
        config_map = get(cp, f"/api/v1/namespaces/{NAMESPACE}/configmaps/{name}")
        assert config_map["metadata"]["labels"]["grafana_dashboard"] == "1"
        assert json.loads(config_map["data"][path.name]) == json.loads(path.read_text())


def test_a_real_prometheus_scrapes_kai_and_every_dashboard_panel_has_data(monitored: Monitored) -> None:
    started = time.monotonic()
    prometheus = monitored.scraped()
    cp = monitored.cp
    not_yet = wait_until(
        "the Config to wait for its Prometheus",
        lambda: condition(cp, "Available") if "Prometheus" in condition(cp, "Available").get("message", "") else None,
        TIMEOUT_S,
    )
    assert not_yet["status"] == "False"
    status = {"conditions": [{"type": "Available", "status": "True", "lastTransitionTime": "2026-01-01T00:00:00Z"}]}
    code, body = cp.request(
        f"{MONITORING}/prometheuses/prometheus/status", "PATCH", {"status": status}, "application/merge-patch+json"
    )
    assert code == 200, body  # what the Prometheus Operator writes once its pods run: the harness' Prometheus does
    wait_until("the Config to be Ready", lambda: condition(cp, "Ready").get("status") == "True", TIMEOUT_S)
    monitored.worked()
    queries = [q for path in sorted(DASHBOARDS.glob("*.json")) for q in panel_queries(path)]

    def lacking() -> list[str]:
        now = time.time()
        empty = []
        for query in queries:
            series = prometheus.query_range(query.expr, monitored.workload_started - 5, now)
            if not any(v[1] not in ("NaN", "+Inf", "-Inf") for s in series for v in s["values"]):
                empty.append(f"{query.dashboard} / {query.panel} / {query.legend}: {query.expr}")
        return empty

    last: list[str] = []

    def every_panel() -> bool:
        last[:] = lacking()
        return not last

    try:
        wait_until("every dashboard panel query to return data", every_panel, 120.0)
    except AssertionError as error:
        raise AssertionError(f"{error}; still without data:\n" + "\n".join(last)) from None
    for path in sorted(DASHBOARDS.glob("*.json")):
        for variable, label, selector in variable_queries(path):
            assert prometheus.label_values(label, selector), f"{path.name}: variable {variable} lists nothing"
    print(f"monitoring: {len(queries)} panel queries with data {time.monotonic() - started:.1f}s after the test began")
    held = f'kai_queue_allocated_gpus{{queue_name="{monitored.queue}"}} == {HELD_GPUS}'
    wait_until("the queue's GPUs to reach Prometheus", lambda: prometheus.query(held) or None, TIMEOUT_S)
    for name in ("kai-queues.json", "kai-scheduler.json"):
        _show(prometheus, DASHBOARDS / name, monitored.queue)


def _show(prometheus: Prometheus, path: Path, queue: str) -> None:
    """Each panel's series now (only ``queue``'s, of those by queue), as Grafana's legend lists them: in the test's
    output, to be looked at."""
    print(f"  {json.loads(path.read_text())['title']}:")
    for query in panel_queries(path):
        for series in prometheus.query(query.expr):
            labels = series["metric"]
            if labels.get("queue_name", queue) != queue:
                continue
            legend = re.sub(r"\{\{(\w+)\}\}", lambda m, labels=labels: labels.get(m.group(1), ""), query.legend)
            print(f"    {query.panel[:44]:<44} {legend[:40]:<40} {float(series['value'][1]):.3f}")


def test_time_based_fair_share_reads_the_prometheus_kai_is_scraped_by(monitored: Monitored) -> None:
    """A user's Prometheus as externalPrometheusUrl and, as KAI's docs say, the shard patched to clientType
    prometheus with no connection string: the operator gives the scheduler the Config's URL, and the queue that
    holds GPUs has usage."""
    cp, install = monitored.cp, monitored.install
    prometheus = monitored.scraped()
    monitored.worked()
    old_hash = install.deployment(SCHEDULER)["spec"]["template"]["metadata"]["annotations"]["configHash"]
    monitored.use_external()
    usage = {
        "clientType": "prometheus",
        "usageParams": {
            "windowSize": "10m",
            "fetchInterval": "2s",
            "stalenessPeriod": "4s",
            "waitTimeout": "10s",
            "extraParams": {"queryResolution": "1s"},
        },
    }
    cp.kubectl(
        "patch", "schedulingshard", "default", "--type=merge", "-p", json.dumps({"spec": {"usageDBConfig": usage}})
    )

    def rendered() -> dict[str, Any] | None:
        annotations = install.deployment(SCHEDULER)["spec"]["template"]["metadata"]["annotations"]
        if annotations["configHash"] == old_hash:
            return None
        config = yaml.safe_load(
            get(cp, f"/api/v1/namespaces/{NAMESPACE}/configmaps/{SCHEDULER}")["data"]["config.yaml"]
        )
        return dict(config.get("usageDBConfig") or {}) or None

    config = wait_until("the operator to render the usage database", rendered, TIMEOUT_S)
    assert config["connectionString"] == prometheus.url
    scheduler = install.run_on_host(SCHEDULER)
    monitored.rescrape()
    port = scheduler.ports["--metrics-bind-address"]
    labels = {"queue_name": monitored.queue, "queue_metadata_name": monitored.queue, "queue_display_name": ""}

    def used() -> float | None:
        value = metric(port, "kai_queue_gpu_usage", **labels)
        return value if value > 0 else None

    gpu_usage = wait_until(f"queue {monitored.queue} to have GPU usage from Prometheus", used, TIMEOUT_S)
    assert metric(port, "kai_usage_query_latency_milliseconds_count") > 0
    assert "cannot reach Prometheus" not in scheduler.log.read_text()
    query = f'kai_queue_gpu_usage{{queue_name="{monitored.queue}"}} > 0'
    wait_until("Prometheus to have scraped that usage", lambda: prometheus.query(query) or None, TIMEOUT_S)
    print(f"time-based fair share: queue {monitored.queue} GPU usage {gpu_usage:.4f}")
    deprecated = get(cp, f"{MONITORING}/prometheuses/prometheus")["metadata"].get("annotations") or {}
    assert "kai/deprecation-timestamp" in deprecated, "the Prometheus kai made is kept for its retention"


def test_kai_doctor_checks_that_every_component_is_scraped(monitored: Monitored) -> None:
    monitored.use_external()
    prometheus = monitored.scraped()
    code, findings = monitored.doctor()
    assert code == 0, findings
    where = f"Prometheus at {prometheus.url}"
    assert sorted(findings) == sorted(
        ("ok", f"{name}: scraped by {where}, 1/1 targets up") for name in METRICS_SERVICES
    )
    monitored.install.host["pod-grouper"].stop()
    wait_until(
        "Prometheus to see the pod-grouper down",
        lambda: prometheus.query('up{job="pod-grouper"} == 0') or None,
        TIMEOUT_S,
    )
    code, findings = monitored.doctor()
    assert code == 1
    assert ("error", f"pod-grouper: 0/1 scrape targets up in {where}: its last scrape failed (is it running, is its "
            "metrics port 8080 reachable?)") in findings  # fmt: skip
    monitored.install.run_on_host("pod-grouper")
    monitored.rescrape()
    code, findings = monitored.doctor("--prometheus=http://127.0.0.1:1")
    assert code == 1
    assert findings[0][0] == "error" and findings[0][1].startswith(
        "cannot ask Prometheus at http://127.0.0.1:1 whether kai is scraped: cannot reach Prometheus"
    ), findings
