"""Fixtures for end-to-end tests on a real cluster: kube-apiserver + etcd (controlplane.py), and on demand the parts
of testcluster.py — `controllers` (kube-controller-manager), `kwok` (the kubelet stand-in; `kwok.node(...)` adds a
Ready GPU node), `kuberay` and `training_operator`. Each part starts once per session, for the first test that asks.

All tests under tests/e2e run in one pytest-xdist worker (group "e2e", with `--dist loadgroup`), so one cluster
serves the whole e2e suite while the other worker runs the unit and conformance tests. If a part cannot be built or
does not start, every test that needs it errors with the reason: never a skip.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TypeVar

import pytest
import testcluster
from admission_support import Admission, serving
from controlplane import ControlPlane, ControlPlaneError, find_binaries, install_crds, start
from kai_support import Kai, kai_all
from lightkube import Client, KubeConfig
from lightkube.models.meta_v1 import ObjectMeta
from lightkube.resources.core_v1 import Namespace

P = TypeVar("P", bound=testcluster.Part)

E2E_GROUP = "e2e"


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "xdist_group(name): run in the same pytest-xdist worker (--dist loadgroup)")


@pytest.hookimpl(tryfirst=True)  # before xdist reads the group marks
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        if "tests/e2e/" in item.nodeid.replace("\\", "/") and not item.get_closest_marker("xdist_group"):
            item.add_marker(pytest.mark.xdist_group(E2E_GROUP))


@pytest.fixture(scope="session")
def control_plane(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ControlPlane]:
    """etcd + kube-apiserver with kai's CRDs installed; `kubeconfig_path`, `server_url`, `token`, `kubectl()`."""
    problem = None
    try:
        cp = start(find_binaries(), tmp_path_factory.mktemp("controlplane"))
    except ControlPlaneError as e:
        problem = str(e)
    if problem is not None:
        pytest.fail(f"no control plane for the e2e tests: {problem}", pytrace=False)
    try:
        install_crds(cp)
    except BaseException:
        cp.stop()
        raise
    try:
        yield cp
    finally:
        cp.stop()


def _run_part(
    start_part: Callable[[ControlPlane, Path], P], cp: ControlPlane, factory: pytest.TempPathFactory, name: str
) -> Iterator[P]:
    try:
        part = start_part(cp, factory.mktemp(name))
    except ControlPlaneError as e:
        pytest.fail(f"no {name} for the e2e tests: {e}", pytrace=False)
    try:
        yield part
    finally:
        part.stop()


@pytest.fixture(scope="session")
def controllers(control_plane: ControlPlane, tmp_path_factory: pytest.TempPathFactory) -> Iterator[testcluster.Part]:
    """kube-controller-manager: Job, CronJob, Deployment, ReplicaSet, StatefulSet, garbage collection, namespaces,
    node lifecycle (testcluster.CONTROLLERS)."""
    yield from _run_part(testcluster.start_controller_manager, control_plane, tmp_path_factory, "controllers")


@pytest.fixture(scope="session")
def kwok(
    control_plane: ControlPlane, controllers: testcluster.Part, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[testcluster.Kwok]:
    """KWOK running the nodes made with `kwok.node(name, gpus, labels)`: pods bound there run, deleted pods go (the
    controllers' node lifecycle controller lifts the not-ready taint, as in a cluster)."""
    yield from _run_part(testcluster.start_kwok, control_plane, tmp_path_factory, "kwok")


@pytest.fixture(scope="session")
def kuberay(control_plane: ControlPlane, tmp_path_factory: pytest.TempPathFactory) -> Iterator[testcluster.Part]:
    """The KubeRay operator (RayCluster, RayJob, RayService) with its CRDs."""
    yield from _run_part(testcluster.start_kuberay, control_plane, tmp_path_factory, "kuberay")


@pytest.fixture(scope="session")
def training_operator(
    control_plane: ControlPlane, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[testcluster.Part]:
    """The Kubeflow training operator (PyTorchJob, MPIJob, TFJob, XGBoostJob, MXJob, PaddleJob) with its CRDs."""
    yield from _run_part(testcluster.start_training_operator, control_plane, tmp_path_factory, "training-operator")


@pytest.fixture(scope="session")
def kube(control_plane: ControlPlane) -> Iterator[Client]:
    """A lightkube client with admin rights on the test control plane."""
    client = Client(config=KubeConfig.from_file(control_plane.kubeconfig_path), field_manager="kai-e2e")
    try:
        yield client
    finally:
        client.close()


@pytest.fixture
def kai(control_plane: ControlPlane, tmp_path: Path) -> Iterator[Kai]:
    """`kai all` on the test cluster (KAI's priority classes applied), stopped after the test."""
    with kai_all(control_plane, tmp_path / "kai.log") as process:
        yield process


@pytest.fixture
def namespace(control_plane: ControlPlane, kube: Client) -> Iterator[str]:
    """A fresh namespace per test. Afterwards its pods, PodGroups and BindRequests are removed at once and the
    namespace is deleted (the namespace controller finishes that where the `controllers` part runs): later tests,
    and the `kai` processes they start, see none of them."""
    name = f"e2e-{uuid.uuid4().hex[:10]}"
    kube.create(Namespace(metadata=ObjectMeta(name=name)))
    yield name
    control_plane.clear_namespace(name)


@pytest.fixture
def admission(control_plane: ControlPlane, tmp_path: Path) -> Iterator[Admission]:
    """`kai admission` serving the webhooks, registered for the test and removed after it (the cluster is shared)."""
    with serving(control_plane, tmp_path) as server:
        yield server
