"""KAI's API-client flags, shared by every command that talks to an API server for long: ``--qps`` and ``--burst``
(client-go's rate limit) and, where the component works on several objects at once, ``--max-concurrent-reconciles``.

Each component has a rate limit of its own, in its own process as in KAI, and in ``kai all`` too (the limit applies
to each component it runs: no component waits behind another's requests); what protects the API server is the
window of requests in flight, which follows the server's refusals (``kai.cluster.kube.ratelimit``).
"""

from collections.abc import Callable
from typing import Any, TypeVar

import click

QPS = 500
BURST = 1000
"""Each component's rate limit: at about four requests per pod, 125 pods a second each, far above what one
component needs on a healthy API server (KAI's 50 / 300 held the binder to about twelve pods a second); what keeps
kai from overloading the server is the window, not this (docs/deviations.md, "API client limits")."""
MAX_CONCURRENT_RECONCILES = 10
"""KAI's default (cmd/*/app/options.go)."""

F = TypeVar("F", bound=Callable[..., object])
GO_BOOL: dict[str, Any] = {"is_flag": False, "flag_value": "true", "default": "false", "type": click.BOOL}
"""A boolean flag as Go's ``flag`` package reads it: ``--flag``, ``--flag=true`` or ``--flag=false``."""
KUBECONFIG_HELP = "Kubeconfig (default: in a pod, its service account; else $KUBECONFIG; else ~/.kube/config)."
"""Where kai looks without --kubeconfig, in that order (``kai.cluster.kube.kubeconfig.load_config``)."""


def rate_limit_options(command: F) -> F:
    """``--qps`` and ``--burst``: each component's rate limit."""

    command = click.option(
        "--burst",
        type=click.IntRange(min=1),
        default=BURST,
        show_default=True,
        help="Requests to the API server each component may send at once before --qps applies.",
    )(command)
    return click.option(
        "--qps",
        type=click.FloatRange(min=0),
        default=float(QPS),
        show_default=True,
        help="Requests a second to the API server each component may send, on average (0 = no limit; Lease "
        "renewals are never held; the API server's refusals slow every component down whatever this allows).",
    )(command)


def reconciles_option(command: F) -> F:
    return click.option(
        "--max-concurrent-reconciles",
        type=click.IntRange(min=1),
        default=MAX_CONCURRENT_RECONCILES,
        show_default=True,
        help="Objects worked on at once (BindRequests, pods to group, statuses to write).",
    )(command)
