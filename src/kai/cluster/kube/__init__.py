"""The cluster port on a real Kubernetes API server (docs/architecture.md §3): ``KubeCluster``, its informers, leader
election.

Modules: ``resources`` (kinds and calls as plain request values), ``decode`` (fast subset decoding of pods and
nodes), ``transport`` (lightkube's connection and auth, retries), ``informer`` (list + watch + re-list on 410),
``runtime`` (the I/O and listener threads), ``client`` (``KubeCluster``), ``leader`` (Lease election),
``kubeconfig`` (loading a kubeconfig with one-line errors).
"""

from kai.cluster.kube.client import KubeCluster
from kai.cluster.kube.errors import AlreadyExists, ApiError, Conflict, Gone, NotFound, Unreachable
from kai.cluster.kube.kubeconfig import KubeconfigError, load_config
from kai.cluster.kube.leader import LeaderElector

__all__ = [
    "AlreadyExists",
    "ApiError",
    "Conflict",
    "Gone",
    "KubeCluster",
    "KubeconfigError",
    "LeaderElector",
    "NotFound",
    "Unreachable",
    "load_config",
]
