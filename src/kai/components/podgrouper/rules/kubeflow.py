"""Kubeflow training jobs (TFJob, XGBoostJob, JAXJob, MPIJob) and Notebooks.

A training job is one gang: ``spec.runPolicy.schedulingPolicy.minAvailable`` when set, else every replica of every
replica type (each type must have at least one). An MPIJob that creates its launcher only once the workers are
ready (``launcherCreationPolicy: WaitForWorkersReady``) does not count the launcher before it exists. A Notebook is
the default PodGroup with the ``build`` priority class.
"""

from kai.components.podgrouper.rules import keys
from kai.components.podgrouper.rules.default import default_grouping
from kai.components.podgrouper.rules.model import Context, Grouping, Obj, Workload

MPI_JOB_NAME_LABEL = "training.kubeflow.org/job-name"
MPI_ROLE_LABEL = "training.kubeflow.org/job-role"


def distributed(workload: Workload, ctx: Context, specs_field: str, required: tuple[str, ...] = ()) -> Grouping:
    grouping = default_grouping(workload, ctx)
    top = workload.top
    min_available = top.get("spec", "runPolicy", "schedulingPolicy", "minAvailable").integer()
    grouping.min_member = min_available if min_available is not None else replica_total(top, specs_field, required)
    return grouping


def replica_total(top: Obj, specs_field: str, required: tuple[str, ...] = ()) -> int:
    """Σ replicas over the job's replica types; every type needs at least one, and ``required`` types must exist."""
    specs = top.get("spec", specs_field)
    if not specs.present:
        raise specs.invalid(f"is required: the replica types of a {top.kind}")
    types = specs.mapping()
    for name in required:
        if name not in types:
            raise specs.get(name).invalid(f"is required: a {top.kind} needs {' and '.join(required)} replicas")
    total = 0
    for name in types:
        replicas = specs.get(name, "replicas")
        count = replicas.integer()
        if count is None or count < 1:
            raise replicas.invalid(f"got {count}; a replica type needs at least 1 replica")
        total += count
    return total


def tfjob(workload: Workload, ctx: Context) -> Grouping:
    return distributed(workload, ctx, "tfReplicaSpecs")


def xgboost_job(workload: Workload, ctx: Context) -> Grouping:
    return distributed(workload, ctx, "xgbReplicaSpecs", ("Master", "Worker"))


def jax_job(workload: Workload, ctx: Context) -> Grouping:
    return distributed(workload, ctx, "jaxReplicaSpecs", ("Worker",))


def mpi_job(workload: Workload, ctx: Context) -> Grouping:
    grouping = distributed(workload, ctx, "mpiReplicaSpecs", ("Launcher", "Worker"))
    top = workload.top
    if top.get("spec", "launcherCreationPolicy").text() == "WaitForWorkersReady" and not _launcher_exists(top, ctx):
        launchers = top.get("spec", "mpiReplicaSpecs", "Launcher", "replicas")
        count = launchers.integer()
        if count is None or count < 1:
            raise launchers.invalid(f"got {count}; an MPIJob needs at least 1 launcher")
        grouping.min_member -= count
    return grouping


def _launcher_exists(top: Obj, ctx: Context) -> bool:
    selector = {MPI_JOB_NAME_LABEL: top.name, MPI_ROLE_LABEL: "launcher"}
    return any(not pod.deleting for pod in ctx.lookup.pods(top.namespace, selector))


def notebook(workload: Workload, ctx: Context) -> Grouping:
    return default_grouping(workload, ctx, keys.BUILD)
