"""``kai operator``: deploys kai from the Config kai-config and the SchedulingShards, as KAI's operator does
(``kai.components.operator``)."""

import logging
import threading

import click

from kai.cli.client_flags import KUBECONFIG_HELP, rate_limit_options
from kai.cluster.kube.client import KubeCluster
from kai.cluster.kube.ratelimit import RateLimit
from kai.components.operator.loop import WATCHED, operate
from kai.components.operator.settings import Image
from kai.components.runtime.serve import ServeError, serve_body
from kai.components.shared.endpoints import EndpointError
from kai.core.model.duration import parse_duration
from kai.core.model.errors import InvalidObject


@click.command()
@click.option("--kubeconfig", type=click.Path(exists=True, dir_okay=False), help=KUBECONFIG_HELP)
@click.option("--context", help="Kubeconfig context.")
@click.option(
    "--image-repository",
    envvar="KAI_IMAGE_REPOSITORY",
    default="",
    help="Registry path of the kai image every component runs [env KAI_IMAGE_REPOSITORY].",
)
@click.option("--image-tag", envvar="KAI_IMAGE_TAG", default="latest", show_default=True, help="[env KAI_IMAGE_TAG]")
@click.option("--period", default="10s", show_default=True, help="Longest time between two reconcile passes.")
@click.option("--metrics-bind-address", default=":8080", show_default=True, help="HOST:PORT for /metrics (0 = off).")
@click.option("--health-probe-bind-address", default=":8081", show_default=True, help="HOST:PORT for the probes.")
@click.option("--leader-elect", is_flag=True, help="Run only while holding the kai-operator Lease.")
@click.option("--namespace", default="kai-scheduler", show_default=True, help="Namespace of the operator's Lease.")
@rate_limit_options()
def operator(
    kubeconfig: str | None,
    context: str | None,
    image_repository: str,
    image_tag: str,
    period: str,
    metrics_bind_address: str,
    health_probe_bind_address: str,
    leader_elect: bool,
    namespace: str,
    qps: float,
    burst: int,
) -> None:
    """Deploy kai from the Config kai-config and the SchedulingShards (KAI's operator)."""
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    logging.getLogger("httpx2").setLevel(logging.WARNING)
    try:
        period_s = parse_duration(period, "command line", "--period")
    except InvalidObject as error:
        raise click.ClickException(str(error)) from error
    image = Image(image_repository, "kai", image_tag)

    def body(cluster: KubeCluster, stop: threading.Event, _registry: object, _health: object) -> None:
        operate(cluster, image, period_s, stop)

    try:
        serve_body(
            list(WATCHED),
            body,
            metrics_bind_address,
            health_probe_bind_address,
            kubeconfig,
            context,
            leader_elect,
            namespace,
            "kai-operator",
            RateLimit(qps, burst),
        )
    except (ServeError, EndpointError) as error:
        raise click.ClickException(str(error)) from error
