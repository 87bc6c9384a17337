"""What the webhooks' decisions depend on: the flags of ``kai admission`` (KAI v0.17's ``cmd/admission`` names)."""

from dataclasses import dataclass

from kai.core.model import names

DEFAULT_RUNTIME_CLASS = "nvidia"


@dataclass(frozen=True, slots=True)
class AdmissionSettings:
    scheduler_name: str = names.SCHEDULER_NAME
    """Only pods with this ``spec.schedulerName`` are mutated or validated (``--scheduler-name``)."""
    gpu_sharing_enabled: bool = False
    """``--gpu-sharing-enabled``: without it, pods asking for a GPU fraction or GPU memory are refused (KAI)."""
    gpu_fraction_runtime_class: str = DEFAULT_RUNTIME_CLASS
    """Set on GPU-sharing pods that name no runtime class (``--gpu-fraction-runtime-class-name``; "" = off)."""
    quota_validation: bool = False
    """``--enable-quota-validation`` (KAI's queue-controller flag): warn when child queues' quotas exceed their
    parent's, and refuse a child queue whose parent does not exist."""
    strict: bool = False
    """``--strict-validation`` (kai's, off by default): also refuse what KAI admits but kai's scheduler cannot use
    (a missing parent queue, a limit below the quota, an unreadable field…). Off, those are warnings: the object is
    stored, and the scheduler reports it on the object (event and condition) until it is mended."""
    resize_quota_validation: bool = True
    """``--validate-pod-resize-quota``: refuse an in-place resize that would take a queue past its limit (or a
    non-preemptible pod's queue past its quota)."""
    block_upsize_on_bounded_queues: bool = False
    """``--block-upsize-on-bounded-queues``: refuse any in-place growth on a queue with a limit, or for a
    non-preemptible pod with a quota, whatever it uses now."""
    queue_admission_gating: bool = False
    """``--queue-admission-gating`` (kai's): pods of queues that opt in are created gated (``queue_gate``)."""
    block_nvidia_visible_devices: bool = False
    """``--block-nvidia-visible-devices`` (KAI's, off by default): containers without a GPU get
    ``NVIDIA_VISIBLE_DEVICES=void``, and a container setting it to choose GPUs is refused (``device_access``)."""
