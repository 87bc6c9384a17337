"""What the monitoring tests need beside the install (install_support.py): the Prometheus Operator's CRDs and a real
Prometheus server, both from hack/monitoring.sh (fetched once, cached under ~/.cache/kai/monitoring/).

No Prometheus Operator runs: the Prometheus the harness starts stands in for the one it would run. Its scrape jobs
are those the Prometheus Operator generates for the ServiceMonitors kai's operator rendered (``scrape_jobs``): each
ServiceMonitor's Services (namespace and label selector), its endpoint port, ``jobLabel`` for the ``job`` label and
the namespace, service, pod and endpoint labels its relabelling adds; only the address differs, since kai's
components run on the host: each target is the host process serving the Service's pods. The scrape interval is 1 s
instead of the ServiceMonitors' 30 s, so that a test does not wait minutes for data.

``panel_queries`` reads the PromQL of every panel of a shipped dashboard (deploy/helm/kai-scheduler/dashboards), with
Grafana's variables as a user who picked "All" gets them.
"""

from __future__ import annotations

import json
import re
import signal
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml
from controlplane import REPO, ControlPlane, Proc, free_port, http_ready, poll_until, provided_directory, spawn
from drill_support import listed

MONITORING_SCRIPT = REPO / "hack" / "monitoring.sh"
DASHBOARDS = REPO / "deploy" / "helm" / "kai-scheduler" / "dashboards"
SCRAPE_INTERVAL = "1s"
RATE_INTERVAL = "30s"
"""What Grafana's $__rate_interval stands for in the tests (at least four scrapes)."""
OPERATOR_CRDS = ("prometheuses.monitoring.coreos.com", "servicemonitors.monitoring.coreos.com")


def operator_crds() -> Path:
    """The directory of the Prometheus Operator's ServiceMonitor and Prometheus CRDs."""
    return provided_directory(MONITORING_SCRIPT, "prometheus-operator-crds") / "crds"


def _matches(labels: Mapping[str, str], selector: Mapping[str, str]) -> bool:
    return all(labels.get(key) == value for key, value in selector.items())


def scrape_jobs(cp: ControlPlane, namespace: str, host_ports: Mapping[str, int]) -> list[dict[str, Any]]:
    """The Prometheus Operator's scrape jobs for the ServiceMonitors of ``namespace``; ``host_ports``: per Service
    name, the host port of the process serving it. A ServiceMonitor whose Service or port does not exist fails."""
    jobs = []
    for monitor in listed(cp, f"/apis/monitoring.coreos.com/v1/namespaces/{namespace}/servicemonitors"):
        spec = monitor["spec"]
        selector = spec["selector"].get("matchLabels") or {}
        for index, endpoint in enumerate(spec["endpoints"]):
            targets = []
            for service_namespace in spec["namespaceSelector"]["matchNames"]:
                for service in listed(cp, f"/api/v1/namespaces/{service_namespace}/services"):
                    meta = service["metadata"]
                    if not _matches(meta.get("labels") or {}, selector):
                        continue
                    ports = {p.get("name") for p in service["spec"]["ports"]}
                    assert endpoint["port"] in ports, f"Service {meta['name']} has no port {endpoint['port']}: {ports}"
                    labels = {
                        "namespace": service_namespace,
                        "service": meta["name"],
                        "endpoint": endpoint["port"],
                        "job": (meta.get("labels") or {}).get(spec.get("jobLabel", ""), meta["name"]),
                    }
                    pods = _pods(cp, service_namespace, service["spec"].get("selector") or {})
                    targets.append({"targets": [f"127.0.0.1:{host_ports[meta['name']]}"], "labels": labels})
                    if pods:
                        targets[-1]["labels"]["pod"] = pods[0]
            assert targets, f"ServiceMonitor {monitor['metadata']['name']} selects no Service"
            jobs.append(
                {
                    "job_name": f"serviceMonitor/{namespace}/{monitor['metadata']['name']}/{index}",
                    "scrape_interval": SCRAPE_INTERVAL,
                    "scrape_timeout": SCRAPE_INTERVAL,
                    "static_configs": targets,
                }
            )
    return jobs


def _pods(cp: ControlPlane, namespace: str, selector: Mapping[str, str]) -> list[str]:
    if not selector:
        return []
    query = urllib.parse.quote(",".join(f"{k}={v}" for k, v in selector.items()))
    return sorted(
        p["metadata"]["name"] for p in listed(cp, f"/api/v1/namespaces/{namespace}/pods?labelSelector={query}")
    )


@dataclass
class Prometheus:
    """A real Prometheus server on loopback, scraping what its scrape jobs name."""

    proc: Proc
    url: str
    config: Path

    def stop(self) -> None:
        self.proc.stop()

    def reload(self, scrape_configs: list[dict[str, Any]]) -> None:
        """New scrape jobs (a component restarted on another port), taken in as on SIGHUP; waits until they are."""
        self.config.write_text(_config(scrape_configs))
        self.proc.popen.send_signal(signal.SIGHUP)
        wanted = {t for job in scrape_configs for c in job["static_configs"] for t in c["targets"]}

        def taken() -> bool:
            active = self._get("targets", {"state": "active"})["activeTargets"]
            return {t["labels"]["instance"] for t in active} == wanted

        poll_until("Prometheus to take in its new scrape jobs", taken, 30.0, [self.proc])

    def query(self, expr: str) -> list[dict[str, Any]]:
        return list(self._get("query", {"query": expr})["result"])

    def query_range(self, expr: str, start: float, end: float, step: float = 1.0) -> list[dict[str, Any]]:
        answer = self._get("query_range", {"query": expr, "start": f"{start:.3f}", "end": f"{end:.3f}", "step": step})
        return list(answer["result"])

    def label_values(self, label: str, match: str) -> list[str]:
        return list(self._get(f"label/{label}/values", {"match[]": match}))

    def _get(self, path: str, params: Mapping[str, Any]) -> Any:
        url = f"{self.url}/api/v1/{path}?{urllib.parse.urlencode(params)}"
        try:
            with urllib.request.urlopen(url, timeout=30) as answer:
                body = json.loads(answer.read())
        except urllib.error.HTTPError as error:
            body = json.loads(error.read())
        assert body.get("status") == "success", f"Prometheus refused {params}: {body}"
        return body["data"]


def start_prometheus(cp: ControlPlane, workdir: Path, scrape_configs: list[dict[str, Any]]) -> Prometheus:
    """Debian's Prometheus (hack/monitoring.sh) with these scrape jobs, ready to answer queries."""
    binary = provided_directory(MONITORING_SCRIPT, "prometheus") / "prometheus"
    config = workdir / "prometheus.yml"
    config.write_text(
        yaml.safe_dump({"global": {"scrape_interval": SCRAPE_INTERVAL}, "scrape_configs": scrape_configs})
    )
    port = free_port()
    proc = spawn(
        "prometheus",
        [
            str(binary),
            f"--config.file={config}",
            f"--storage.tsdb.path={workdir / 'data'}",
            f"--web.listen-address=127.0.0.1:{port}",
            "--storage.tsdb.retention.time=1d",
        ],
        workdir / "prometheus.log",
    )
    url = f"http://127.0.0.1:{port}"
    try:
        poll_until(
            "Prometheus to be ready", lambda: http_ready(f"{url}/-/ready", None, None, lambda _: True), 60.0, [proc]
        )
    except BaseException:
        proc.stop()
        raise
    return Prometheus(proc, url, config)


def _config(scrape_configs: list[dict[str, Any]]) -> str:
    return yaml.safe_dump({"global": {"scrape_interval": SCRAPE_INTERVAL}, "scrape_configs": scrape_configs})


VARIABLE = re.compile(r"\$\{?(\w+)\}?")
LABEL_VALUES = re.compile(r"^label_values\((.*),\s*(\w+)\)$")


@dataclass(frozen=True)
class PanelQuery:
    dashboard: str
    panel: str
    legend: str
    expr: str


def _all(board: dict[str, Any]) -> dict[str, str]:
    """Each variable as "All" gives it: its allValue (.*), and $__rate_interval."""
    values = {v["name"]: v.get("allValue", ".*") for v in board["templating"]["list"] if v["type"] == "query"}
    return values | {"__rate_interval": RATE_INTERVAL}


def _substituted(text: str, values: Mapping[str, str]) -> str:
    return VARIABLE.sub(lambda m: values.get(m.group(1), m.group(0)), text)


def panel_queries(path: Path) -> list[PanelQuery]:
    """Every target of every panel, as its PromQL runs with each variable at "All"."""
    board = json.loads(path.read_text())
    values = _all(board)
    return [
        PanelQuery(board["title"], panel["title"], target.get("legendFormat", ""), _substituted(target["expr"], values))
        for panel in board["panels"]
        for target in panel["targets"]
    ]


def variable_queries(path: Path) -> list[tuple[str, str, str]]:
    """(variable, label, series selector) of each ``label_values(selector, label)`` variable, the others at "All"."""
    board = json.loads(path.read_text())
    values = _all(board)
    found = []
    for variable in board["templating"]["list"]:
        if variable["type"] != "query":
            continue
        match = LABEL_VALUES.match(variable["query"]["query"])
        assert match, f"{path.name}: variable {variable['name']} is not a label_values() query"
        found.append((variable["name"], match.group(2), _substituted(match.group(1), values)))
    return found
