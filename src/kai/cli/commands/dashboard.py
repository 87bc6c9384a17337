"""``kai dashboard``: a read-only web page of a live cluster (the kubeconfig flags and the running scheduler's plugin
server, as ``kai queues``) or of a file (``-f``: a scenario, manifests or a snapshot), served on this machine until
Ctrl-C. It shows what ``kai queues`` shows, and each queue's history, the nodes' GPUs, the last cycles and what-if
runs (``kai simulate``) drawn as both runs."""

import sys
from typing import Any

import click

from kai.cli.fix_search import fix_options, fix_search
from kai.cli.sources import Source, source_options
from kai.cluster.kube import ApiError, KubeCluster
from kai.cluster.prometheus import PrometheusApi
from kai.components.admission.webhooks import DEFAULT_NAMESPACE
from kai.components.dashboard.board import Board
from kai.components.dashboard.feeds import Feed, FileFeed, LiveFeed
from kai.components.dashboard.server import Dashboard, allowed_hosts, serve
from kai.components.insight.inspect import Inspection
from kai.components.insight.live import LiveError, connect
from kai.components.insight.pending import Prove
from kai.components.operator.known_prometheus import known_prometheus
from kai.components.shared.endpoints import EndpointError, parse_address
from kai.core.model.duration import parse_duration
from kai.core.model.errors import InvalidObject

PROMETHEUS_TIMEOUT_S = 10.0


@click.command()
@click.option(
    "--address",
    default="127.0.0.1:8090",
    show_default=True,
    help="HOST:PORT to serve the page on (port 0: any free one). The page shows the cluster's workloads: the "
    "default serves this machine only.",
)
@click.option(
    "--refresh",
    default="5s",
    show_default=True,
    help="Time between two looks at a live cluster (a file is looked at again when it changes).",
)
@click.option(
    "--prometheus",
    "prometheus_url",
    default="",
    help="URL of a Prometheus that scrapes kai, for the queues' history (default: the Config's spec.prometheus; "
    "without one, the scheduler's usage store).",
)
@click.option("--history", "history_window", default="6h", show_default=True, help="How far back the history goes.")
@fix_options
@source_options
def dashboard(
    address: str,
    refresh: str,
    prometheus_url: str,
    history_window: str,
    fix_budget: float,
    fix_candidates: int,
    **options: Any,
) -> None:
    """Serve a read-only web page of the cluster: queues with their history, workloads waiting in order with why and
    the fix (proven as kai queues proves it, within --fix-budget a look), nodes and their GPUs, the last cycles,
    what-if runs."""
    source = Source.of(options)
    try:
        bound = parse_address(address, "--address")
        refresh_s = parse_duration(refresh, "command line", "--refresh")
        window_s = parse_duration(history_window, "command line", "--history", days=True)
    except (EndpointError, InvalidObject) as error:
        raise click.BadParameter(str(error)) from None
    if refresh_s <= 0:
        raise click.BadParameter(f"--refresh {refresh}: give a time above 0, such as 5s")
    if bound is None:
        raise click.BadParameter("--address 0 serves nothing: give HOST:PORT, such as 127.0.0.1:8090")

    def fixes(ins: Inspection) -> Prove | None:
        return fix_search(ins, fix_budget, fix_candidates, listing=True)

    if source.files:
        config = str(source.scheduler_conf) if source.scheduler_conf else "the input's, else KAI's default"
        _serve(FileFeed(source.label, source.files, lambda: source.inspect()[0], config, fixes), bound, refresh_s)
        return
    side = source.scheduler_side()
    try:
        with connect(source.kubeconfig, source.context, side.config, watch=True) as cluster:
            prometheus = _prometheus(cluster, prometheus_url)
            _serve(LiveFeed(cluster, side, source.label, prometheus, window_s, fixes), bound, refresh_s)
    except LiveError as error:
        raise click.ClickException(str(error)) from error


def _prometheus(cluster: KubeCluster, url: str) -> PrometheusApi | None:
    try:
        return known_prometheus(cluster, url, DEFAULT_NAMESPACE, PROMETHEUS_TIMEOUT_S)
    except ApiError as error:
        click.echo(f"kai dashboard: the Config cannot be read ({error}): no Prometheus for the history", err=True)
        return None


def _serve(feed: Feed, bound: tuple[str, int], refresh_s: float) -> None:
    board = Board(feed, refresh_s)
    app = Dashboard(board, hosts=None)
    host, port = bound
    try:
        server = serve(app, host, port)
    except EndpointError as error:
        raise click.ClickException(str(error)) from None
    app.hosts = allowed_hosts(host, server.server_port)
    board.start()
    shown = host if host not in ("0.0.0.0", "::") else "<this machine's name>"
    click.echo(f"kai dashboard: {feed.label} at http://{shown}:{server.server_port}/ (read-only; Ctrl-C to stop)")
    sys.stdout.flush()
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        board.close()
        server.server_close()
