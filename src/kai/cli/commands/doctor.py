"""``kai doctor``: is the installation healthy, as NVCF's cluster agent checks it and as a platform operator would."""

import json
import logging
import sys

import click
from rich.console import Console

from kai.cli.client_flags import KUBECONFIG_HELP
from kai.cluster.kube.client import KubeCluster
from kai.cluster.kube.errors import Unreachable
from kai.cluster.kube.kubeconfig import KubeconfigError, load_config
from kai.cluster.kube.transport import RetryPolicy
from kai.components.doctor import report
from kai.components.doctor.gather import DoctorOptions, examine
from kai.core.model.duration import parse_duration
from kai.core.model.errors import InvalidObject

DOCTOR_TIMEOUT_S = 10.0
DOCTOR_RETRY = RetryPolicy(attempts=2)
"""The doctor is run by a person waiting for it: one retry, and a dead API server is reported within seconds."""


class CannotCheck(click.ClickException):
    """The doctor could not examine the cluster at all (no kubeconfig, no API server): exit 2, not 1."""

    exit_code = 2


@click.command()
@click.option("--kubeconfig", type=click.Path(exists=True, dir_okay=False), help=KUBECONFIG_HELP)
@click.option("--context", help="Kubeconfig context.")
@click.option("--namespace", default="kai-scheduler", show_default=True, help="Where kai's Deployments run.")
@click.option(
    "--nvcf", is_flag=True, help="NVCF's rule too: the default queues must have quota, limit, weight -1/-1/1."
)
@click.option("--pending-for", default="5m", show_default=True, help="Report kai pods pending longer than this.")
@click.option("--probe", "probes", multiple=True, help="HOST:PORT of a local `kai all`'s probes (repeatable).")
@click.option(
    "--prometheus",
    default="",
    help="URL of a Prometheus that scrapes kai: each component's targets must be up (default: the Config's "
    "externalPrometheusUrl, else the Prometheus kai's operator made).",
)
@click.option("-o", "--output", type=click.Choice(["text", "json"]), default="text", show_default=True)
def doctor(
    kubeconfig: str | None,
    context: str | None,
    namespace: str,
    nvcf: bool,
    pending_for: str,
    probes: tuple[str, ...],
    prometheus: str,
    output: str,
) -> None:
    """Check the installation as NVCF's cluster agent does (CRDs, default queues) and as a platform operator
    would (components ready, webhooks answering, every component scraped by Prometheus, quotas within the cluster,
    pods waiting too long).

    Exit 0 when healthy (warnings allowed), 1 when a check fails, 2 when the cluster cannot be examined."""
    try:
        pending_s = parse_duration(pending_for, "command line", "--pending-for")
        options = DoctorOptions(namespace, nvcf, pending_s, probes, prometheus)
        config = load_config(kubeconfig, context)
    except (InvalidObject, KubeconfigError) as error:
        raise CannotCheck(str(error)) from error
    logging.basicConfig(level=logging.ERROR, format="%(levelname)s %(name)s: %(message)s")
    cluster = KubeCluster(config, component="kai-doctor", timeout_s=DOCTOR_TIMEOUT_S, retry=DOCTOR_RETRY)
    try:
        with cluster:
            findings = examine(cluster, options)
    except Unreachable as error:
        raise CannotCheck(f"the API server {config.cluster.server} does not answer: {error.message}") from error
    if output == "json":
        click.echo(json.dumps(report.as_json(findings), indent=2))
    else:
        report.print_table(findings, Console(width=None if sys.stdout.isatty() else 200))
    if not report.healthy(findings):
        sys.exit(1)
