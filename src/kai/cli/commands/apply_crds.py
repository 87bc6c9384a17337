"""``kai apply-crds``: the chart's CRD upgrade hook (Helm installs CRDs but never upgrades them)."""

from pathlib import Path

import click

from kai.cli.client_flags import KUBECONFIG_HELP
from kai.cluster.kube.client import KubeCluster
from kai.cluster.kube.errors import ApiError
from kai.cluster.kube.kubeconfig import KubeconfigError
from kai.components.operator.crds import CrdFileError, apply_crds, read_crds


@click.command(name="apply-crds")
@click.argument("paths", nargs=-1, required=True, type=click.Path(exists=True, path_type=Path))
@click.option("--kubeconfig", type=click.Path(exists=True, dir_okay=False), help=KUBECONFIG_HELP)
@click.option("--context", help="Kubeconfig context.")
def apply_crds_command(paths: tuple[Path, ...], kubeconfig: str | None, context: str | None) -> None:
    """Apply CRDs server-side, taking them over from Helm (the chart's CRD upgrade hook)."""
    try:
        crds = read_crds(list(paths))
        with KubeCluster.from_kubeconfig(kubeconfig, context=context, component="kai-crd-upgrader") as cluster:
            applied = apply_crds(cluster, crds)
    except (CrdFileError, KubeconfigError, ApiError) as error:
        raise click.ClickException(str(error)) from error
    click.echo(f"applied {len(applied)} CRDs: {', '.join(applied)}")
