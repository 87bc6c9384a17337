"""`kai dashboard` in a real browser (Debian's Chromium, headless), as a user opens it:

- against the test cluster: `kai all` scheduling, a real Prometheus scraping it (the history), a gang held by its
  queue's limit (its reason, and its fix proven as `kai queues` proves it), a half-GPU pod (a shared GPU on the node
  grid), a queue whose displayName is markup (shown as text), the page refreshed without reloading when a new
  workload waits, and a what-if whose changed run starts the gang;
- against a file of 1,000 nodes and 10,000 pods (dashboard_scenario.py): the queue tree, the gangs' reasons and what
  one needs, the history of the simulated run, 1,000 node tiles and a what-if comparison.

Everything is asserted on the page's DOM, with no error in the browser's console; each test keeps a screenshot
(build/e2e-screenshots/).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from controlplane import ControlPlane, ControlPlaneError
from dashboard_scenario import GANG, GIANT, MARKUP, NODES, write_scenario
from dashboard_support import Browser, DashboardProcess, browser_binaries
from drill_support import fraction_pod, gang
from kai_support import Kai, apply, wait_until
from monitoring_support import Prometheus, start_prometheus
from selenium.webdriver.common.by import By
from testcluster import Kwok

FIRST_LOOK_S = 1800.0
"""A look at 1,000 nodes and 10,000 pods runs the file's six cycles: about 90 s alone on two cores, 640 s at a load
of 15 on them."""


@pytest.fixture(scope="module")
def binaries() -> tuple[str, str]:
    try:
        return browser_binaries()
    except ControlPlaneError as error:
        pytest.fail(f"no browser for the dashboard tests: {error}", pytrace=False)


@pytest.fixture
def browser(binaries: tuple[str, str], tmp_path: Path) -> Iterator[Browser]:
    chromium, chromedriver = binaries
    opened = Browser(chromium, chromedriver, tmp_path / "profile")
    try:
        yield opened
    finally:
        opened.close()


@pytest.fixture
def prometheus(control_plane: ControlPlane, kai: Kai, tmp_path: Path) -> Iterator[Prometheus]:
    """A real Prometheus scraping `kai all` every second."""
    job = {"job_name": "kai", "static_configs": [{"targets": [f"127.0.0.1:{kai.metrics_port}"]}]}
    (tmp_path / "prometheus").mkdir()
    server = start_prometheus(control_plane, tmp_path / "prometheus", [job])
    try:
        yield server
    finally:
        server.stop()


def queue_spec(gpu_limit: int = -1, **spec: object) -> dict[str, object]:
    unlimited = {"quota": -1, "limit": -1, "overQuotaWeight": 1}
    gpu = {"quota": -1, "limit": gpu_limit, "overQuotaWeight": 1}
    return {"resources": {"gpu": gpu, "cpu": unlimited, "memory": unlimited}, **spec}


def queue(name: str, **spec: object) -> dict[str, object]:
    return {"apiVersion": "scheduling.run.ai/v2", "kind": "Queue", "metadata": {"name": name}, "spec": spec}


def rows(browser: Browser, css: str, attribute: str) -> list[str]:
    return [str(row.get_attribute(attribute)) for row in browser.find(css)]


def run_what_if(browser: Browser, changes: str, duration: str, period: str, timeout: float) -> None:
    browser.find("#whatif-changes")[0].send_keys(changes)
    for name, value in (("duration", duration), ("period", period)):
        field = browser.find(f"#whatif-form input[name={name}]")[0]
        field.clear()
        field.send_keys(value)
    browser.find("#whatif-run")[0].click()
    done = "#whatif-result:not([hidden]) #whatif-totals tr"
    browser.wait("the what-if comparison", lambda: browser.find(done), timeout)


def table(browser: Browser, css: str) -> dict[str, list[str]]:
    """The rows of a table's body by their first cell: the other cells' texts."""
    found = {}
    for row in browser.find(f"{css} tr"):
        first, *rest = [cell.text for cell in row.find_elements(By.CSS_SELECTOR, "td")]
        found[first] = rest
    return found


def test_the_dashboard_of_the_test_cluster(
    control_plane: ControlPlane,
    namespace: str,
    kai: Kai,
    kwok: Kwok,
    prometheus: Prometheus,
    browser: Browser,
    tmp_path: Path,
) -> None:
    pool, parent, team, sandbox = f"dash-{namespace}", f"p-{namespace}", f"q-{namespace}", f"m-{namespace}"
    apply(
        control_plane,
        tmp_path,
        queue(parent, **queue_spec()),
        queue(team, **queue_spec(4, parentQueue=parent)),
        queue(sandbox, **queue_spec(parentQueue=parent, displayName=MARKUP)),
    )
    node = f"{pool}-gpu"
    kwok.node(node, 8, {"pool": pool})
    apply(control_plane, tmp_path, *gang(namespace, "first", team, pool, 1, 2))
    apply(control_plane, tmp_path, fraction_pod(namespace, "notebook", sandbox, pool))
    apply(control_plane, tmp_path, *gang(namespace, "big", team, pool, 2, 2))
    wait_until("the first job and the notebook to run", lambda: _running(control_plane, namespace) >= 2)

    served = DashboardProcess(
        [
            f"--kubeconfig={control_plane.kubeconfig_path}",
            f"--scheduler-address=127.0.0.1:{kai.plugin_port}",
            f"--prometheus={prometheus.url}",
            "--refresh=1s",
            "--history=10m",
        ],
        tmp_path / "dashboard.log",
    )
    try:
        browser.open(served.url)
        browser.wait("the queue tree", lambda: team in rows(browser, "#queue-rows tr", "data-queue"))
        tree = rows(browser, "#queue-rows tr", "data-queue")
        assert tree.index(parent) < tree.index(sandbox) < tree.index(team)  # the children under their parent
        shown = browser.find(f'#queue-rows tr[data-queue="{sandbox}"] .display')[0]
        assert shown.text == MARKUP  # the markup as characters
        assert not browser.find("#queues img, #queues b") and browser.script("return window.kaiInjected") is None

        browser.find(f'#queue-rows tr[data-queue="{team}"]')[0].click()  # its history and its waiting workloads
        gang_row = f'#pending-rows tr[data-podgroup="{namespace}/big"]'
        browser.wait("the gang's row", lambda: browser.find(gang_row))
        why = browser.text(f"{gang_row} .why")
        assert why.startswith("QueueLimit") and f"queue {team} would exceed its GPU limit: limit 4 GPUs" in why
        fix = f"{gang_row} .fix.proven"  # proven by a what-if run of the look, as kai queues proves it
        found = browser.wait("the gang's proven fix", lambda: browser.text(fix), timeout=120.0)
        assert found == f"raise the GPU limit of queue {team} from 4 to 6 GPUs (proven)"

        assert browser.text("#history-queue-title") == f"queue {team}"
        assert browser.text("#history-source") == f"from Prometheus at {prometheus.url}"

        def charted() -> list[str]:
            labels = [label.text for label in browser.find("#history-queue .u-series .u-label")]
            return labels if {"allocated", "fair share"} <= set(labels) else []

        browser.wait("the queue's history from Prometheus", charted, timeout=90.0)
        tile = browser.find(f'#node-tiles [data-node="{node}"]')[0]
        assert str(tile.get_attribute("title")).startswith(f"{node}: 8 GPUs, 2 held whole, 1 shared (0.5 held)")
        assert int(browser.text("#cycle-rows tr td")) > 0  # the newest of the scheduler's kept cycles
        assert browser.text("#cycles-source") == f"from the scheduler at 127.0.0.1:{kai.plugin_port}"

        browser.script("window.kaiMarker = 'not reloaded'")
        apply(control_plane, tmp_path, *gang(namespace, "late", team, pool, 1, 4))
        late = f'#pending-rows tr[data-podgroup="{namespace}/late"]'
        browser.wait("the new workload on the page", lambda: browser.find(late))
        assert browser.script("return window.kaiMarker") == "not reloaded"

        run_what_if(browser, f"queue.{team}.gpu.limit=12", "3m", "1m", timeout=300.0)
        # pods started: the gang's two, with the higher limit only (late finds no room on the node)
        assert table(browser, "#whatif-queues")[team][0] == "0 → 2"
        assert len(browser.find("#whatif-charts canvas")) >= 2
        assert browser.errors() == []
    finally:
        browser.screenshot("dashboard-test-cluster")  # kept, passed or failed
        served.stop()


def _running(cp: ControlPlane, namespace: str) -> int:
    status, body = cp.request(f"/api/v1/namespaces/{namespace}/pods")
    pods = body.get("items", []) if status == 200 else []
    return sum(1 for pod in pods if (pod.get("status") or {}).get("phase") == "Running")


def test_the_dashboard_of_a_1000_node_cluster(browser: Browser, tmp_path: Path) -> None:
    served = DashboardProcess(["-f", str(write_scenario(tmp_path))], tmp_path / "dashboard.log")
    try:
        browser.open(served.url)
        queues = ["research", "sandbox", "team-llm", "team-speech", "team-vision"]
        browser.wait("the first look", lambda: rows(browser, "#queue-rows tr", "data-queue") == queues, FIRST_LOOK_S)
        assert browser.text('#queue-rows tr[data-queue="sandbox"] .display') == MARKUP
        assert not browser.find("#queues img, #queues b") and browser.script("return window.kaiInjected") is None

        gang_row = f'#pending-rows tr[data-podgroup="llm/{GANG}"]'
        browser.find("#pending-filter")[0].send_keys(GANG)
        assert rows(browser, "#pending-rows tr", "data-podgroup") == [f"llm/{GANG}"]
        why = browser.text(f"{gang_row} .why")
        assert why.startswith("QueueLimit") and "queue team-llm would exceed its GPU limit: limit 3000 GPUs" in why
        # the file's clock runs: no fix is proven (kai queues -f searches none either: a fix is proven from the
        # input's start, the view is of its end)
        assert browser.text(f"{gang_row} .fix") == "—"
        giant_row = f'#pending-rows tr[data-podgroup="vision/{GIANT}"]'
        browser.find("#pending-filter")[0].clear()
        browser.find("#pending-filter")[0].send_keys(GIANT)
        browser.wait("the giant gang's row", lambda: browser.find(giant_row))
        needs = "needs: request at most 8 GPUs (the largest node), or add a larger node"
        assert browser.text(f"{giant_row} .fix") == needs

        assert browser.text("#history-source").startswith("from the simulated run of research cluster")
        legend = {label.text for label in browser.find("#history-all .u-series .u-label")}
        assert {"team-llm", "team-vision", "team-speech", "sandbox"} <= legend
        assert len(browser.find("#node-tiles .tile")) == NODES
        assert browser.text("#nodes-totals").startswith(f"{NODES:,} nodes, 8,000 GPUs: ")
        assert browser.find("#node-tiles .tile[title*=' shared (']")  # GPUs the notebooks share
        assert len(browser.find("#cycle-rows tr")) == 6

        run_what_if(browser, "queue.team-llm.gpu.limit=5000", "20m", "10m", timeout=FIRST_LOOK_S)
        totals = table(browser, "#whatif-totals")
        assert totals["GPUs in the cluster"] == ["8000", "8000"] and set(totals) >= {"pods started", "evictions"}
        assert set(table(browser, "#whatif-queues")) == {  # the leaf queues, as kai simulate --what-if lists them
            "sandbox",
            "team-llm",
            "team-speech",
            "team-vision",
        }
        assert len(browser.find("#whatif-charts canvas")) >= 2
        assert browser.errors() == []
    finally:
        browser.screenshot("dashboard-1000-nodes")  # kept, passed or failed
        served.stop()
