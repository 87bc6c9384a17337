"""``kai snapshot``: what a scheduling cycle sees, saved in KAI's snapshot format (``kai simulate FILE`` runs it)."""

import time
from pathlib import Path
from typing import Any

import click

from kai.cli.client_flags import KUBECONFIG_HELP
from kai.cli.sources import DEFAULT_SCHEDULER, given_node_pool, node_pool_options
from kai.components.insight.live import LiveError, connect, scheduler_side
from kai.components.scheduler.capture import capture
from kai.components.scheduler.plugin_client import Unreachable, fetch
from kai.components.scheduler.snapshot_format import shard_of, write_zip


@click.command()
@click.option(
    "-o", "--output", default="snapshot.zip", show_default=True, type=click.Path(dir_okay=False, path_type=Path)
)
@click.option("--kubeconfig", type=click.Path(exists=True, dir_okay=False), help=KUBECONFIG_HELP)
@click.option("--context", help="Kubeconfig context.")
@click.option(
    "--scheduler-conf",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="Scheduler configuration to record (default: the running scheduler's, else KAI's default).",
)
@click.option(
    "--scheduler-address", default=DEFAULT_SCHEDULER, show_default=True, help="The scheduler's plugin server."
)
@click.option("--from-scheduler", is_flag=True, help="Ask the running scheduler for its snapshot (/get-snapshot).")
@node_pool_options
def snapshot(
    output: Path,
    kubeconfig: str | None,
    context: str | None,
    scheduler_conf: Path | None,
    scheduler_address: str,
    from_scheduler: bool,
    **pool: Any,
) -> None:
    """Capture the cluster state a cycle sees (pods, nodes, queues, podgroups, bind requests, priority classes,
    topologies, DRA objects) and the scheduler config, as KAI's snapshot plugin does, into a zip. With node pools,
    a pool's: its nodes, queues and PodGroups, and every pod (as KAI's shard snapshot)."""
    given = given_node_pool(pool)
    if from_scheduler:
        if given is not None:
            raise click.ClickException(
                "--partition-label-value does not go with --from-scheduler: a scheduler's snapshot is of its own pool "
                "(ask that pool's scheduler, with --scheduler-address)"
            )
        try:
            data = fetch(scheduler_address, "/get-snapshot")
        except Unreachable as error:
            raise click.ClickException(str(error)) from error
        _write(output, data)
        click.echo(f"wrote {output}: the snapshot of the scheduler at {scheduler_address}")
        return
    try:
        side = scheduler_side(scheduler_conf, scheduler_address, given)
        with connect(kubeconfig, context, side.config, watch=False) as cluster:
            objects = capture(cluster, side.config)
    except LiveError as error:
        raise click.ClickException(str(error)) from error
    shard = shard_of(objects, side.node_pool)
    _write(output, write_zip(side.config, shard, time.time()))
    counts = ", ".join(f"{len(items)} {kind}" for kind, items in shard.objects.items())
    of_pool = f"node pool {shard.pool.name}; " if shard.pool is not None else ""
    click.echo(f"wrote {output}: {counts}; {of_pool}scheduler config: {side.source}")


def _write(path: Path, data: bytes) -> None:
    try:
        path.write_bytes(data)
    except OSError as error:
        raise click.ClickException(f"{path}: cannot be written: {error.strerror or error}") from error
