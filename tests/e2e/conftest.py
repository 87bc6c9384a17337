"""Fixtures for end-to-end tests on a real kube-apiserver + etcd (see controlplane.py).

All tests under tests/e2e run in one pytest-xdist worker (group "e2e", with `--dist loadgroup`), so one control
plane serves the whole e2e suite while the other worker runs the unit and conformance tests. If the binaries cannot
be had or the control plane does not start, every e2e test errors with the reason: never a skip.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest
from controlplane import ControlPlane, ControlPlaneError, find_binaries, install_crds, start
from lightkube import Client, KubeConfig
from lightkube.models.meta_v1 import ObjectMeta
from lightkube.resources.core_v1 import Namespace

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


@pytest.fixture(scope="session")
def kube(control_plane: ControlPlane) -> Iterator[Client]:
    """A lightkube client with admin rights on the test control plane."""
    client = Client(config=KubeConfig.from_file(control_plane.kubeconfig_path), field_manager="kai-e2e")
    try:
        yield client
    finally:
        client.close()


@pytest.fixture
def namespace(kube: Client) -> str:
    """A fresh namespace per test (there is no namespace controller, so namespaces are never deleted)."""
    name = f"e2e-{uuid.uuid4().hex[:10]}"
    kube.create(Namespace(metadata=ObjectMeta(name=name)))
    return name
