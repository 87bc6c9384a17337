"""A RayJob's submitter as KubeRay makes it (``submissionMode``, K8sJobMode by default), and the RayJob's end.

In K8sJobMode KubeRay makes, once the RayCluster is ready (all its pods run), a Job named as the RayJob that runs
``ray job submit`` from ``spec.submitterPodTemplate`` (by default one ``ray-job-submitter`` container of the head's
image asking 500m CPU and 200Mi, ``restartPolicy: Never``, no ``schedulerName``); SidecarMode adds that container to
the head pod instead; HTTPMode and InteractiveMode make no pod. The RayJob is Complete when the submitter Job is; with
``shutdownAfterJobFinishes`` its RayCluster is deleted ``ttlSecondsAfterFinished`` later.

KAI's pod-grouper gives a submitter pod meant for KAI the RayJob's PodGroup without a sub-group (it has no
``ray.io/group`` label), so KAI never schedules it (KubeRay v1.6's KAI integration refuses K8sJobMode for this
reason; v1.5, the one kai's test cluster runs, does not). The default one is the default scheduler's.
``stand_ins.ray_job`` says so and runs the latter without a node. In SidecarMode the Ray job starts once every pod
of the cluster runs and ends its run time (the RayJob's run-time annotation) later.
"""

import copy
from typing import Any

from kai.cluster.port import Raw
from kai.components.sim.lifecycle import RUN_TIME_ANNOTATION
from kai.components.sim.workload_objects import Invalid, child, mapping, pod_template, template_meta, whole_number
from kai.core.model.duration import parse_duration
from kai.core.model.errors import InvalidObject

SUBMISSION_MODES = ("K8sJobMode", "HTTPMode", "InteractiveMode", "SidecarMode")
SUBMITTER_LABELS = {"ray.io/originated-from-crd": "RayJob", "app.kubernetes.io/created-by": "kuberay-operator"}
CR_NAME_LABEL = "ray.io/originated-from-cr-name"


def submission_mode(ray_job: Raw) -> str:
    mode = mapping(ray_job, "spec").get("submissionMode") or "K8sJobMode"
    if mode not in SUBMISSION_MODES:
        raise Invalid("spec.submissionMode", f"got {mode!r}; allowed: {', '.join(SUBMISSION_MODES)}")
    return str(mode)


def default_submitter(cluster: Raw) -> dict[str, Any]:
    """KubeRay's submitter container: the head's image, 500m CPU and 200Mi asked, 1 CPU and 1Gi at most."""
    containers = mapping(cluster, "spec", "headGroupSpec", "template", "spec").get("containers") or [{}]
    return {
        "name": "ray-job-submitter",
        "image": containers[0].get("image", "") if isinstance(containers[0], dict) else "",
        "resources": {"requests": {"cpu": "500m", "memory": "200Mi"}, "limits": {"cpu": "1", "memory": "1Gi"}},
    }


def submitter_job(ray_job: Raw, cluster: Raw) -> Raw:
    """The submitter Job, ``<rayjob>``, owned by the RayJob; the RayJob's run-time annotation (the Ray job's length,
    a kai extension) goes to its pod unless its template gives one."""
    name = ray_job["metadata"]["name"]
    if mapping(ray_job, "spec", "submitterPodTemplate"):
        template = copy.deepcopy(pod_template(ray_job, "spec", "submitterPodTemplate"))
    else:
        template = {"spec": {"containers": [default_submitter(cluster)], "restartPolicy": "Never"}}
    labels = {CR_NAME_LABEL: name, **SUBMITTER_LABELS}
    annotations = template_meta(template, "annotations")
    run_time = (ray_job["metadata"].get("annotations") or {}).get(RUN_TIME_ANNOTATION)
    if run_time is not None:
        annotations.setdefault(RUN_TIME_ANNOTATION, run_time)
    template["metadata"] = {**(template.get("metadata") or {}), "annotations": annotations}  # KubeRay labels the Job
    backoff = whole_number(ray_job, ("spec", "submitterConfig", "backoffLimit"), 2)
    job = child(ray_job, "batch/v1", "Job", name, {"backoffLimit": backoff, "template": template})
    job["metadata"]["labels"], job["metadata"]["annotations"] = labels, {}
    return job


def sidecar_run_time(ray_job: Raw) -> float | None:
    """SidecarMode: how long the Ray job runs once the cluster does (the RayJob's run-time annotation; None: until
    the end of the run)."""
    text = (ray_job["metadata"].get("annotations") or {}).get(RUN_TIME_ANNOTATION)
    if text is None:
        return None
    key = f"{ray_job['metadata'].get('namespace')}/{ray_job['metadata']['name']}"
    field = f"metadata.annotations[{RUN_TIME_ANNOTATION}]"
    try:
        return parse_duration(str(text), f"RayJob {key}", field)
    except InvalidObject as error:
        raise Invalid(field, error.problem) from None


def with_sidecar(cluster: Raw) -> Raw:
    """SidecarMode: the head pod runs the submitter as one more container."""
    sidecar = copy.deepcopy(cluster)
    head = sidecar["spec"]["headGroupSpec"]["template"]["spec"]
    head["containers"] = [*head["containers"], default_submitter(cluster)]
    return sidecar
