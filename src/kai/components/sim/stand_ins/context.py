"""What the stand-ins share: the problems they found (each said once), the names taken, and the few cluster
operations they all do (a workload's objects deleted as the garbage collector would, an object created once)."""

from dataclasses import dataclass, field

from kai.cluster.memory import MemoryCluster
from kai.cluster.port import Raw
from kai.components.sim.problems import WARNING, Problem
from kai.components.sim.workload_objects import controller_ref, owner_refs, uid
from kai.core.model import names
from kai.core.model.errors import InvalidObject
from kai.core.state.cluster_state import object_key


@dataclass
class Context:
    problems: list[Problem] = field(default_factory=list)
    taken: set[tuple[str, str]] = field(default_factory=set)
    """(kind, key) of every object of the input and made so far: a made object never takes a name twice."""
    scheduler_name: str = names.SCHEDULER_NAME

    def admit(self, made: Raw, workload: Raw) -> bool:
        """Whether ``made`` has a name of its own; a name the input (or an earlier workload) took is reported."""
        key = (made["kind"], object_key(made))
        if key not in self.taken:
            self.taken.add(key)
            return True
        problem = f"would make {made['kind']} {key[1]}, which already exists; it is not made (rename one of the two)"
        self.report(WARNING, workload, "metadata.name", problem)
        return False

    def report(self, severity: str, obj: Raw, field: str, problem: str) -> None:
        """A problem of ``obj``, once (a CronJob whose Job's name is taken meets it at every step)."""
        key = object_key(obj)
        found = Problem.of(severity, obj["kind"], key, InvalidObject(f"{obj['kind']} {key}", field, problem))
        if found not in self.problems:
            self.problems.append(found)


def delete(cluster: MemoryCluster, owner: Raw, pods: list[str] | None = None) -> None:
    """An object gone (a Job, a RayCluster), with its pods and the PodGroups of theirs it owns, as the garbage
    collector would (at once: no termination grace period). ``pods``: its pods' keys when known (else every pod
    of the cluster is looked at)."""
    if pods is None:
        pods = [object_key(pod) for pod in cluster.list("Pod") if owned_by(pod, owner)]
    podgroups = set()
    for key in pods:
        pod = cluster.peek("Pod", key)
        if pod is None:
            continue
        group = (pod["metadata"].get("annotations") or {}).get(names.POD_GROUP_ANNOTATION)
        if group:
            podgroups.add(f"{pod['metadata'].get('namespace')}/{group}")
        cluster.finalize("Pod", key)
    for key in sorted(podgroups):
        podgroup = cluster.peek("PodGroup", key)
        if podgroup is not None and owned_by(podgroup, owner):
            cluster.finalize("PodGroup", key)
    cluster.finalize(owner["kind"], object_key(owner))


def owner_key(obj: Raw, kind: str) -> str:
    """The key of ``obj``'s controlling owner of ``kind`` ("" when it has none)."""
    ref = controller_ref(obj)
    return f"{obj['metadata'].get('namespace')}/{ref['name']}" if ref is not None and ref["kind"] == kind else ""


def owned_by(obj: Raw, owner: Raw) -> bool:
    return any(ref.get("uid") == uid(owner) for ref in owner_refs(obj))


def create_new(cluster: MemoryCluster, obj: Raw) -> bool:
    """Creates ``obj`` unless an object of its name exists (one a workload made earlier, submitted again); whether
    it did."""
    if cluster.peek(obj["kind"], object_key(obj)) is not None:
        return False
    cluster.create(obj["kind"], obj)
    return True
