"""``kai admission``: the admission webhooks' HTTPS server, with KAI's flags (``kai.components.admission``)."""

import logging
from pathlib import Path

import click

from kai.cli.client_flags import GO_BOOL, KUBECONFIG_HELP, rate_limit_options
from kai.cluster.kube.ratelimit import RateLimit
from kai.components.admission.component import DEFAULT_CERT_DIR, AdmissionError, AdmissionOptions, serve_admission
from kai.components.admission.settings import DEFAULT_RUNTIME_CLASS, AdmissionSettings
from kai.components.shared.endpoints import EndpointError
from kai.core.model import names

"""A boolean flag as Go's pflag takes it: ``--flag``, ``--flag=true`` or ``--flag=false`` (KAI's operator writes
``--gpu-sharing-enabled=true``)."""


@click.command()
@click.option("--kubeconfig", type=click.Path(exists=True, dir_okay=False), help=KUBECONFIG_HELP)
@click.option("--context", help="Kubeconfig context.")
@click.option("--scheduler-name", default=names.SCHEDULER_NAME, show_default=True, help="Pods of this scheduler only.")
@click.option(
    "--webhook-addr", default="9443", show_default=True, help="Port (or HOST:PORT) of the HTTPS webhook server."
)
@click.option(
    "--cert-dir",
    type=click.Path(file_okay=False, path_type=Path),
    default=DEFAULT_CERT_DIR,
    show_default=True,
    help="Folder of tls.crt and tls.key; a change on disk is served from the next connection on.",
)
@click.option("--metrics-bind-address", default=":8080", show_default=True, help="HOST:PORT for /metrics (0 = off).")
@click.option(
    "--health-probe-bind-address", default=":8081", show_default=True, help="HOST:PORT for /healthz, /readyz."
)
@click.option(
    "--gpu-sharing-enabled", **GO_BOOL, help="Admit pods asking for a GPU fraction or GPU memory (=true/false)."
)
@click.option(
    "--gpu-fraction-runtime-class-name",
    default=None,
    help=f'Runtime class set on GPU-sharing pods that name none (default {DEFAULT_RUNTIME_CLASS}; "" = off).',
)
@click.option("--gpu-pod-runtime-class-name", default=None, help="Deprecated alias of the flag above (KAI's).")
@click.option(
    "--enable-quota-validation",
    is_flag=True,
    help="KAI's: warn when child queues' quotas exceed their parent's, refuse a child whose parent does not exist.",
)
@click.option(
    "--strict-validation",
    is_flag=True,
    help="kai's: refuse objects kai's scheduler cannot use (a missing parent queue, …); without it they are warnings.",
)
@click.option(
    "--validate-pod-resize-quota",
    **{**GO_BOOL, "default": "true"},
    help="Refuse an in-place pod resize that takes a queue past its limit (=true/false; default true).",
)
@click.option(
    "--block-upsize-on-bounded-queues",
    **GO_BOOL,
    help="Refuse any in-place pod growth on a queue with a cpu/memory limit (=true/false).",
)
@click.option(
    "--queue-admission-gating",
    **GO_BOOL,
    help="kai's: pods of queues annotated kai.scheduler/queue-admission-gating=true are created gated (=true/false).",
)
@click.option(
    "--block-nvidia-visible-devices",
    **GO_BOOL,
    help="Give containers without a GPU NVIDIA_VISIBLE_DEVICES=void; refuse one that picks GPUs with it (=true/false).",
)
@click.option("--leader-elect", is_flag=True, help="Accepted for KAI's operator; every replica serves webhooks.")
@rate_limit_options
def admission(
    kubeconfig: str | None,
    context: str | None,
    scheduler_name: str,
    webhook_addr: str,
    cert_dir: Path,
    metrics_bind_address: str,
    health_probe_bind_address: str,
    gpu_sharing_enabled: bool,
    gpu_fraction_runtime_class_name: str | None,
    gpu_pod_runtime_class_name: str | None,
    enable_quota_validation: bool,
    strict_validation: bool,
    validate_pod_resize_quota: bool,
    block_upsize_on_bounded_queues: bool,
    queue_admission_gating: bool,
    block_nvidia_visible_devices: bool,
    leader_elect: bool,
    qps: float,
    burst: int,
) -> None:
    """Serve the admission webhooks: pod mutation and validation (and of in-place resizes), Queue, PodGroup and
    Topology validation."""
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    logging.getLogger("httpx2").setLevel(logging.WARNING)
    runtime_class = next(
        (name for name in (gpu_fraction_runtime_class_name, gpu_pod_runtime_class_name) if name is not None),
        DEFAULT_RUNTIME_CLASS,
    )
    settings = AdmissionSettings(
        scheduler_name,
        gpu_sharing_enabled,
        runtime_class,
        enable_quota_validation,
        strict_validation,
        validate_pod_resize_quota,
        block_upsize_on_bounded_queues,
        queue_admission_gating,
        block_nvidia_visible_devices,
    )
    options = AdmissionOptions(
        settings,
        webhook_addr,
        cert_dir,
        metrics_bind_address,
        health_probe_bind_address,
        rate_limit=RateLimit(qps, burst),
    )
    try:
        serve_admission(options, kubeconfig, context)
    except (AdmissionError, EndpointError) as error:
        raise click.ClickException(str(error)) from error
