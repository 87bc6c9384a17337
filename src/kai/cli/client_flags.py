"""KAI's API-client flags, shared by every command that talks to an API server for long: ``--qps`` and ``--burst``
(client-go's rate limit) and, where the component works on several objects at once, ``--max-concurrent-reconciles``.

KAI runs one process per component, each with its own limit (50 requests a second, bursts of 300); ``kai all`` runs
several in one process, so its defaults are the sum of theirs.
"""

from collections.abc import Callable
from typing import TypeVar

import click

QPS = 50
BURST = 300
MAX_CONCURRENT_RECONCILES = 10
"""KAI's defaults for one component (cmd/*/app/options.go)."""

F = TypeVar("F", bound=Callable[..., object])
KUBECONFIG_HELP = "Kubeconfig (default: in a pod, its service account; else $KUBECONFIG; else ~/.kube/config)."
"""Where kai looks without --kubeconfig, in that order (``kai.cluster.kube.kubeconfig.load_config``)."""


def rate_limit_options(components: int = 1) -> Callable[[F], F]:
    """``--qps`` and ``--burst`` for a process running ``components`` of KAI's components."""

    def decorate(command: F) -> F:
        command = click.option(
            "--burst",
            type=click.IntRange(min=1),
            default=BURST * components,
            show_default=True,
            help="Requests to the API server allowed at once before --qps applies.",
        )(command)
        return click.option(
            "--qps",
            type=click.FloatRange(min=0),
            default=float(QPS * components),
            show_default=True,
            help="Requests a second to the API server, on average (0 = no limit; Lease renewals are never held).",
        )(command)

    return decorate


def reconciles_option(command: F) -> F:
    return click.option(
        "--max-concurrent-reconciles",
        type=click.IntRange(min=1),
        default=MAX_CONCURRENT_RECONCILES,
        show_default=True,
        help="Objects worked on at once (BindRequests, pods to group, statuses to write).",
    )(command)
