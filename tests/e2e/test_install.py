"""Installing kai the way the seed does, on the test cluster: `helm upgrade -i kai-scheduler <chart> -n
kai-scheduler --create-namespace`, then `-f examples/seed/nvcf-values.yaml`.

KWOK runs the component pods as stand-ins; the real kai components run on the host as their Deployments say, each
with a token of the ServiceAccount the operator made (install_support.py), so what they do here they may do with
the RBAC the operator rendered. ``kai admission`` serves its webhooks with the certificate the operator issued; the
API server reaches them at the admission Service's ClusterIP through the test network (servicenet.py). The wheel
and the chart are checked first, without a cluster; last, the operator is killed (kill -9) and what it renders
drifts, with drill_support's end-state check of a workload run meanwhile.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
import urllib.parse
import urllib.request
import uuid
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
import yaml
from admission_support import kubectl_apply, queue
from controlplane import REPO, ControlPlane
from drill_support import Drill, delete_nodes, gang, get, listed, make_nodes
from install_support import (
    CHART,
    COMPONENTS,
    NAMESPACE,
    SCHEDULER,
    TIMEOUT_S,
    WEBHOOKS,
    Install,
    Judged,
    adopt,
    helm,
    team_queues,
    workload_pod,
)
from kai_support import gpu_pod, kubectl_json
from kube.kube_support import wait_until
from testcluster import Kwok

from kai.components.operator.certs import CA_SECRET
from kai.components.operator.workloads import WEBHOOK_SECRET

SEED = REPO / "examples" / "seed"
SEVEN = {"admission", "binder", "kai-operator", "pod-grouper", "podgroup-controller", "queue-controller", SCHEDULER}
CRDS = {
    "configs.kai.scheduler",
    "schedulingshards.kai.scheduler",
    "topologies.kai.scheduler",
    "queues.scheduling.run.ai",
    "podgroups.scheduling.run.ai",
    "bindrequests.scheduling.run.ai",
}
IMAGE_COMMANDS = {
    "operator", "scheduler", "binder", "podgrouper", "podgroup-controller", "queue-controller", "admission",
    "apply-crds",
}  # fmt: skip
"""What the chart's pods run."""


# ------------------------------------------------------------------------------------------- without a cluster


def test_the_wheel_installs_in_a_clean_virtualenv_and_every_component_runs(tmp_path: Path) -> None:
    """What the image does (Dockerfile): build kai's wheel, install it with its pinned dependencies, run each
    component's entry point."""
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--wheel-dir", str(tmp_path / "wheels"), str(REPO)],
        check=True,
        capture_output=True,
        timeout=300,
    )
    wheel = next((tmp_path / "wheels").glob("kai-*.whl"))
    subprocess.run([sys.executable, "-m", "venv", str(tmp_path / "venv")], check=True, timeout=120)
    clean = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}  # else pip sees the source tree's kai
    pip = tmp_path / "venv" / "bin" / "pip"
    subprocess.run(
        [str(pip), "install", "--quiet", str(wheel)], check=True, capture_output=True, timeout=600, env=clean
    )
    kai = str(tmp_path / "venv" / "bin" / "kai")
    listed = subprocess.run([kai, "--help"], capture_output=True, text=True, timeout=60, check=True, env=clean).stdout
    commands = {line.split()[0] for line in listed.partition("Commands:\n")[2].splitlines() if line.strip()}
    assert commands >= IMAGE_COMMANDS, f"kai --help lists {sorted(commands)}"
    for command in sorted(commands):
        run = subprocess.run([kai, command, "--help"], capture_output=True, text=True, timeout=60, env=clean)
        assert run.returncode == 0, f"kai {command} --help: {run.stderr}"
        assert f"Usage: kai {command}" in run.stdout


def test_the_chart_lints_and_refuses_an_unknown_value(control_plane: ControlPlane) -> None:
    helm(control_plane, "lint", str(CHART))
    helm(control_plane, "lint", str(CHART), "-f", str(SEED / "nvcf-values.yaml"))
    wrong = helm(control_plane, "lint", str(CHART), "--set", "scheduler.placementStrategie=spread", check=False)
    assert wrong.returncode != 0
    assert "additional properties 'placementStrategie' not allowed" in wrong.stdout + wrong.stderr


def test_fips_mode_on_appends_fips_to_every_image_tag(control_plane: ControlPlane) -> None:
    """KAI's ``global.fipsMode`` (#2007): "on" runs the FIPS image variants, the operator's and the components' (the
    operator renders theirs from the tag it is given)."""

    def images(*values: str) -> list[str]:
        out = helm(control_plane, "template", "kai-scheduler", str(CHART), "-n", NAMESPACE, *values).stdout
        found = []
        for doc in (d for d in yaml.safe_load_all(out) if d and d.get("kind") in ("Deployment", "Job")):
            for container in doc["spec"]["template"]["spec"]["containers"]:
                found.append(container["image"])
                found += [e["value"] for e in container.get("env") or [] if e["name"] == "KAI_IMAGE_TAG"]
        return sorted(found)

    plain = images("--set", "global.tag=v1.2.3")
    assert plain and all(image.endswith("v1.2.3") for image in plain)
    fips = images("--set", "global.tag=v1.2.3", "--set", "global.fipsMode=on")
    assert fips == [image + "-fips" for image in plain]
    wrong = helm(control_plane, "lint", str(CHART), "--set", "global.fipsMode=true", check=False)
    assert wrong.returncode != 0 and "fipsMode" in wrong.stdout + wrong.stderr


# ------------------------------------------------------------------------------------------- the install


@pytest.fixture(scope="module")
def install(control_plane: ControlPlane, kwok: Kwok, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Install]:
    """The seed's install: helm, then the operator and every component on the host."""
    adopt(control_plane)
    setup = Install(control_plane, kwok, tmp_path_factory.mktemp("install"))
    try:
        setup.helm_install()
        setup.run_on_host("kai-operator")
        setup.serve_admission()
        for name in (*COMPONENTS, SCHEDULER):
            setup.run_on_host(name)
        yield setup
    finally:
        setup.stop()


def test_the_seed_install_runs_seven_components_with_kais_crds_and_config(install: Install) -> None:
    cp = install.cp
    assert [run.returncode for run in install.system.hook_runs] == [0], "the CRD upgrade hook ran once and worked"
    assert "applied 6 CRDs" in install.system.hook_runs[0].stdout

    def running() -> set[str]:
        pods = kubectl_json(cp, "get", "pods", "-n", NAMESPACE)["items"]
        return {p["metadata"]["labels"]["app"] for p in pods if p["status"].get("phase") == "Running"}

    wait_until("the seven components' pods to run", lambda: running() >= SEVEN, TIMEOUT_S)
    listed = cp.kubectl("get", "pods", "-n", NAMESPACE).stdout
    for name in SEVEN:
        assert f"\n{name}-" in listed, f"{name} missing from kubectl get pods:\n{listed}"
    crds = cp.kubectl("get", "crd").stdout
    assert {line.split()[0] for line in crds.splitlines()[1:]} >= CRDS
    assert {line.split()[0] for line in crds.splitlines() if "kai" in line} >= {c for c in CRDS if "kai" in c}
    configs = cp.kubectl("get", "config", "-n", NAMESPACE).stdout.splitlines()
    assert [line.split()[0] for line in configs[1:]] == ["kai-config"]

    def ready() -> dict[str, Any]:
        conditions = kubectl_json(cp, "get", "config", "kai-config").get("status", {}).get("conditions", [])
        by_type = {c["type"]: c for c in conditions}
        return by_type if by_type.get("Ready", {}).get("status") == "True" else {}

    conditions = wait_until("Config kai-config to be Ready", ready, TIMEOUT_S)
    assert {t: c["status"] for t, c in conditions.items()} == {
        "Reconciling": "False", "Deployed": "True", "Available": "True", "DependenciesFulfilled": "True",
        "Ready": "True",
    }  # fmt: skip


def _can(cp: ControlPlane, account: str, *request: str) -> bool:
    as_user = f"--as=system:serviceaccount:{NAMESPACE}:{account}"
    return cp.kubectl("auth", "can-i", *request, as_user, check=False).stdout.strip() == "yes"


def test_each_component_holds_the_rights_it_uses_and_no_more(install: Install) -> None:
    cp = install.cp
    assert _can(cp, "binder", "create", "pods/binding", "-n", "team-a")
    assert _can(cp, "scheduler", "create", "bindrequests.scheduling.run.ai", "-n", "team-a")
    assert _can(cp, "pod-grouper", "create", "podgroups.scheduling.run.ai", "-n", "team-a")
    assert _can(cp, "queue-controller", "patch", "queues.scheduling.run.ai", "--subresource=status")
    assert not _can(cp, "pod-grouper", "delete", "pods", "-n", "team-a")
    assert not _can(cp, "binder", "create", "podgroups.scheduling.run.ai", "-n", "team-a")
    assert not _can(cp, "queue-controller", "list", "pods")
    assert not _can(cp, "scheduler", "create", "pods/binding", "-n", "team-a")
    assert _can(cp, "kai-operator", "escalate", "clusterroles.rbac.authorization.k8s.io/kai-binder")
    assert not _can(cp, "kai-operator", "escalate", "clusterroles.rbac.authorization.k8s.io/cluster-admin")
    assert not _can(cp, "kai-operator", "bind", "clusterroles.rbac.authorization.k8s.io/cluster-admin")
    assert not _can(cp, "kai-operator", "delete", "pods", "-n", "team-a")
    assert install.forbidden() == []


# ------------------------------------------------------------------------------------------- the NVCF values


class Workloads:
    """One round of the three behaviours on fresh nodes and a fresh namespace."""

    def __init__(self, cp: ControlPlane, kwok: Kwok, tmp_path: Path) -> None:
        self.cp, self.tmp_path = cp, tmp_path
        self.tag = uuid.uuid4().hex[:6]
        self.namespace = f"install-{self.tag}"
        cp.kubectl("create", "namespace", self.namespace)
        for pool, count, gpus, cpu in (("gpu", 2, 8, "64"), ("cpu", 2, 0, "8"), ("pre", 1, 8, "64")):
            for i in range(count):
                kwok.node(f"{self.tag}-{pool}-{i}", gpus=gpus, cpu=cpu, labels={"pool": f"{self.tag}-{pool}"})
        self.queue = f"{self.tag}-team"
        self.apply(*team_queues(f"{self.tag}-parent", self.queue, 8))

    def apply(self, *documents: dict[str, Any]) -> None:
        path = self.tmp_path / f"{uuid.uuid4().hex[:6]}.yaml"
        path.write_text(yaml.safe_dump_all(documents))
        self.cp.kubectl("apply", "-f", str(path))

    def pods(self) -> dict[str, dict[str, Any]]:
        items = kubectl_json(self.cp, "get", "pods", "-n", self.namespace)["items"]
        return {p["metadata"]["name"]: p for p in items}

    def run(self, name: str, pool: str, priority: str, request: dict[str, str]) -> str:
        """Creates the pod and returns the node it runs on."""
        self.apply(workload_pod(self.namespace, name, self.queue, f"{self.tag}-{pool}", priority, request))
        return str(self.running(name)["spec"]["nodeName"])

    def running(self, name: str) -> dict[str, Any]:
        def found() -> dict[str, Any]:
            pod = self.pods().get(name) or {}
            return pod if (pod.get("status") or {}).get("phase") == "Running" else {}

        return wait_until(f"pod {name} to run", found, TIMEOUT_S)

    def placement(self) -> tuple[bool, bool]:
        """(whole-GPU pods share a node, CPU pods share a node)."""
        gpu = {self.run(f"gpu-{i}", "gpu", "train", {"nvidia.com/gpu": "1"}) for i in range(2)}
        cpu = {self.run(f"cpu-{i}", "cpu", "train", {"cpu": "1"}) for i in range(2)}
        return len(gpu) == 1, len(cpu) == 1

    def preempted(self) -> bool:
        """A preemptible pod holds the node's 8 GPUs; a non-preemptible one of the same queue wants them."""
        self.run("low", "pre", "train", {"nvidia.com/gpu": "8"})
        self.apply(
            workload_pod(self.namespace, "high", self.queue, f"{self.tag}-pre", "inference", {"nvidia.com/gpu": "8"})
        )

        def decided() -> str:
            pods = self.pods()
            low, high = pods.get("low"), pods["high"]
            if low is None or low["metadata"].get("deletionTimestamp"):
                return "preempted"
            conditions = (high.get("status") or {}).get("conditions") or []
            waiting = any(c["type"] == "PodScheduled" and c["status"] == "False" for c in conditions)
            return "kept" if waiting else ""

        outcome = wait_until("the scheduler to preempt the low pod or to say why high waits", decided, TIMEOUT_S)
        if outcome == "preempted":
            self.running("high")
        return outcome == "preempted"


def _queue_resources(cp: ControlPlane, name: str) -> dict[str, Any]:
    return dict(kubectl_json(cp, "get", "queue", name)["spec"]["resources"])


@pytest.fixture
def rounds(install: Install, kwok: Kwok, tmp_path: Path) -> Iterator[Callable[[], Workloads]]:
    """Makes a round of workloads in a namespace of its own; the namespaces are cleared after the test."""
    made: list[Workloads] = []

    def new_round() -> Workloads:
        made.append(Workloads(install.cp, kwok, tmp_path))
        return made[-1]

    yield new_round
    for workloads in made:
        install.cp.clear_namespace(workloads.namespace)


def test_nvcf_values_change_the_scheduler_and_the_default_queues(
    install: Install, rounds: Callable[[], Workloads]
) -> None:
    cp = install.cp
    before = rounds()
    assert before.placement() == (True, True), "KAI's default: GPU and CPU pods bin-pack"
    assert before.preempted(), "KAI's default: preempt runs"
    assert _queue_resources(cp, "default-queue")["gpu"] == {"quota": 0, "limit": -1, "overQuotaWeight": 1}

    old_hash = install.deployment(SCHEDULER)["spec"]["template"]["metadata"]["annotations"]["configHash"]
    install.helm_install("-f", str(SEED / "nvcf-values.yaml"))

    def new_config() -> bool:
        annotations = install.deployment(SCHEDULER)["spec"]["template"]["metadata"]["annotations"]
        return bool(annotations["configHash"] != old_hash)

    wait_until("the operator to render the NVCF scheduler config", new_config, TIMEOUT_S)
    install.run_on_host(SCHEDULER)  # the Deployment's new pod, with the new config
    after = rounds()
    assert after.placement() == (True, False), "NVCF: GPU pods bin-pack, CPU pods spread"
    assert not after.preempted(), "NVCF: preempt is off"
    unlimited = {"quota": -1, "limit": -1, "overQuotaWeight": 1}
    everything = {"cpu": unlimited, "gpu": unlimited, "memory": unlimited}
    for name in ("default-parent-queue", "default-queue"):
        wait_until(f"{name} to be unlimited", lambda name=name: _queue_resources(cp, name) == everything, TIMEOUT_S)
    called = install.admitted()
    webhooks = {"/mutate--v1-pod", "/validate--v1-pod", "/validate-scheduling-run-ai-v2-queue",
                "/validate-scheduling-run-ai-v2alpha2-podgroup"}  # fmt: skip
    assert called >= webhooks, f"kai admission answered {called} (the API server trusts the operator's CA bundle)"
    assert install.forbidden() == [], "the rendered RBAC is enough for what the components did"
    print(f"install test: helm upgrade took {install.install_s:.1f}s")


def test_kai_doctor_on_the_nvcf_install_is_healthy_until_a_default_queue_is_broken(install: Install) -> None:
    """The NVCF seed's check after its install (the previous test left the NVCF values applied): healthy, then its
    texts once the default queue has a GPU quota; and a Queue under a missing parent is admitted with a warning, as
    KAI admits it, and listed by the doctor."""
    cp = install.cp
    healthy = install.doctor("--nvcf")
    assert healthy.returncode == 0, healthy.stdout + healthy.stderr
    assert "default-queue is a child of default-parent-queue with quota, limit and overQuotaWeight -1/-1/1" in (
        healthy.stdout
    )
    for name in ("binder", "kai-operator", "pod-grouper", "podgroup-controller", "queue-controller", SCHEDULER):
        assert f"Deployment {NAMESPACE}/{name}: 1/1 replicas available" in healthy.stdout, healthy.stdout
    assert "webhook validating-kai-admission/" in healthy.stdout and " does not answer" not in healthy.stdout
    unlimited = '{"spec":{"resources":{"gpu":{"quota":-1,"limit":-1}}}}'
    try:
        cp.kubectl("patch", "queue", "default-queue", "--type=merge", "-p",
                   '{"spec":{"resources":{"gpu":{"quota":4,"limit":8}}}}')  # fmt: skip
        broken = install.doctor("--nvcf")
        assert broken.returncode == 1, broken.stdout + broken.stderr
        assert "GPU resource violation for queue default-queue" in broken.stdout
    finally:
        cp.kubectl("patch", "queue", "default-queue", "--type=merge", "-p", unlimited)
    done = kubectl_apply(cp, queue("orphan-install", "no-such-parent"))  # admitted as KAI admits it, with a warning
    try:
        assert done.returncode == 0, done.stderr
        assert "field spec.parentQueue: parent queue 'no-such-parent' does not exist" in done.stderr
        warned = install.doctor()
        assert warned.returncode == 0, warned.stdout + warned.stderr  # a warning: it stops only its own workloads
        assert "Queue orphan-install: field spec.parentQueue: parent queue 'no-such-parent' does not exist" in (
            warned.stdout
        )
    finally:
        cp.kubectl("delete", "queue", "orphan-install", "--ignore-not-found")


# ------------------------------------------------------------------------------------------- the operator killed

OPERATOR = "kai-operator"
DEPLOYMENTS = f"/apis/apps/v1/namespaces/{NAMESPACE}/deployments"
CONFIG = "/apis/kai.scheduler/v1/configs/kai-config"
SCHEDULER_CONFIG = f"/api/v1/namespaces/{NAMESPACE}/configmaps/{SCHEDULER}"
LEASES = f"/apis/coordination.k8s.io/v1/namespaces/{NAMESPACE}/leases"
MANAGED = urllib.parse.quote("app.kubernetes.io/managed-by=kai-operator")
WEBHOOK_PATHS = {
    "mutatingwebhookconfiguration": "/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations",
    "validatingwebhookconfiguration": "/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations",
}
RENDERED_KINDS = {
    "Deployment": DEPLOYMENTS,
    "Service": f"/api/v1/namespaces/{NAMESPACE}/services",
    "ConfigMap": f"/api/v1/namespaces/{NAMESPACE}/configmaps",
    "Secret": f"/api/v1/namespaces/{NAMESPACE}/secrets",
    "ServiceAccount": f"/api/v1/namespaces/{NAMESPACE}/serviceaccounts",
    "Role": f"/apis/rbac.authorization.k8s.io/v1/namespaces/{NAMESPACE}/roles",
    "RoleBinding": f"/apis/rbac.authorization.k8s.io/v1/namespaces/{NAMESPACE}/rolebindings",
    "ClusterRole": "/apis/rbac.authorization.k8s.io/v1/clusterroles",
    "ClusterRoleBinding": "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings",
    "MutatingWebhookConfiguration": WEBHOOK_PATHS["mutatingwebhookconfiguration"],
    "ValidatingWebhookConfiguration": WEBHOOK_PATHS["validatingwebhookconfiguration"],
    "Queue": "/apis/scheduling.run.ai/v2/queues",
}
"""Where each kind the operator renders is listed (it labels everything it renders managed-by=kai-operator)."""
BY_GENERATION = {"Deployment", "Queue"}
"""Kinds whose status other controllers write: a rewrite of the operator's shows in the generation."""
DRILL_NODES = 4
"""32 GPUs: room for both waves (26 GPUs)."""
POLL_S = 0.25


def _rendered(cp: ControlPlane) -> dict[tuple[str, str], tuple[str, str]]:
    """(kind, name) → (uid, version) of every object the operator rendered."""
    found: dict[tuple[str, str], tuple[str, str]] = {}
    for kind, path in RENDERED_KINDS.items():
        for obj in listed(cp, f"{path}?labelSelector={MANAGED}"):
            meta = obj["metadata"]
            assert (kind, meta["name"]) not in found, f"{kind} {meta['name']} listed twice"
            version = meta["generation"] if kind in BY_GENERATION else meta["resourceVersion"]
            found[(kind, meta["name"])] = (meta["uid"], str(version))
    return found


def _names(cp: ControlPlane, path: str) -> list[str]:
    return sorted(obj["metadata"]["name"] for obj in listed(cp, path))


def _trust(cp: ControlPlane) -> dict[str, Any]:
    """What the webhooks' TLS rests on: the CA and serving Secrets' data and each webhook's caBundle."""
    trust: dict[str, Any] = {
        name: get(cp, f"/api/v1/namespaces/{NAMESPACE}/secrets/{name}")["data"] for name in (CA_SECRET, WEBHOOK_SECRET)
    }
    for kind, name in WEBHOOKS:
        trust[name] = [
            hook["clientConfig"]["caBundle"] for hook in get(cp, f"{WEBHOOK_PATHS[kind]}/{name}")["webhooks"]
        ]
    return trust


def _config_converged(cp: ControlPlane) -> bool:
    """The Config's conditions say its current generation is deployed and available."""
    config = get(cp, CONFIG)
    conditions = {c["type"]: c for c in (config.get("status") or {}).get("conditions") or []}
    wanted = {"Reconciling": "False", "Deployed": "True", "Available": "True", "Ready": "True"}
    return all(
        conditions.get(kind, {}).get("status") == status
        and conditions[kind].get("observedGeneration") == config["metadata"]["generation"]
        for kind, status in wanted.items()
    )


def _queue_controller_resources(cp: ControlPlane) -> dict[str, Any]:
    """The queue-controller container's resources ({} when none are set: the API server's default)."""
    container = get(cp, f"{DEPLOYMENTS}/queue-controller")["spec"]["template"]["spec"]["containers"][0]
    return dict(container.get("resources") or {})


def _set_queue_controller_resources(cp: ControlPlane, resources: dict[str, Any] | None) -> None:
    """A Config change the operator renders into one Deployment (None: back to the chart's, which sets none)."""
    patch = {"spec": {"queueController": {"service": {"resources": resources}}}}
    status, body = cp.request(CONFIG, "PATCH", patch, "application/merge-patch+json")
    assert status == 200, f"patching Config kai-config: {status} {body}"


def _wave(drill: Drill, wave: str) -> list[dict[str, Any]]:
    """A gang of three 1-GPU pods, a gang of two 2-GPU pods and six 1-GPU singles: 11 pods, 13 GPUs."""
    ns, queue_name, pool = drill.namespace, drill.queue, drill.pool
    return [
        *gang(ns, f"{wave}-g3x1", queue_name, pool, 3, 1),
        *gang(ns, f"{wave}-g2x2", queue_name, pool, 2, 2),
        *(gpu_pod(ns, f"{wave}-s{i}", queue_name, pool, 1) for i in range(6)),
    ]


def test_operator_killed_mid_render_restarts_into_what_it_renders(
    install: Install, namespace: str, tmp_path: Path
) -> None:
    """kill -9 of the operator right after a Config change it must render. While it is down the pod-grouper's
    Deployment is deleted, the scheduler's ConfigMap edited by hand, the Config changed again, and a workload
    arrives: the components do not need the operator, so it binds (drill_support's end-state check). Started
    again, the operator renders from the objects as they are: the Deployment is back as it was, the ConfigMap as
    rendered, the Config's last change in place and the Config Ready for its generation; nothing else is made again
    or rewritten (no object twice, no new Lease or Secret, the CA and serving certificate kept: certs.ensure keeps
    a pair that is valid and covers the Service). Afterwards the Config is as it was."""
    cp = install.cp
    wait_until("the operator to have converged", lambda: _config_converged(cp), TIMEOUT_S, POLL_S)
    config_spec = get(cp, CONFIG)["spec"]
    rendered, trust, leases = _rendered(cp), _trust(cp), _names(cp, LEASES)
    secrets = _names(cp, RENDERED_KINDS["Secret"])
    pod_grouper = get(cp, f"{DEPLOYMENTS}/pod-grouper")
    scheduler_config = get(cp, SCHEDULER_CONFIG)["data"]
    assert {("Deployment", "pod-grouper"), ("ConfigMap", SCHEDULER)} <= set(rendered)
    assert _queue_controller_resources(cp) == {}

    pool, queue_name = f"drill-{namespace}", f"q-{namespace}"
    drill = Drill(cp, "operator_killed_workload", namespace, pool, queue_name, tmp_path)
    drill.nodes = make_nodes(cp, pool, DRILL_NODES)
    drill.kais = [Judged(install.host, name) for name in sorted(install.host)]
    first, second = {"requests": {"cpu": "101m"}}, {"requests": {"cpu": "102m"}}
    try:
        drill.submit([queue(queue_name, "default-parent-queue"), *_wave(drill, "a")])
        drill.wait_bound(1)

        _set_queue_controller_resources(cp, first)
        install.host[OPERATOR].kill()  # at once: the operator has the change to render
        killed = time.monotonic()
        drill.fault_begins()
        rendered_at_kill = _queue_controller_resources(cp) == first
        status, body = cp.request(f"{DEPLOYMENTS}/pod-grouper", "DELETE")
        assert status == 200, body
        edit = {"data": {"config.yaml": "actions: allocate\n# edited by hand\n"}}
        status, body = cp.request(SCHEDULER_CONFIG, "PATCH", edit, "application/merge-patch+json")
        assert status == 200, body
        _set_queue_controller_resources(cp, second)
        drill.submit(_wave(drill, "b"))
        wait_until(
            "the workload to bind with the operator down", lambda: drill.to_bind() <= set(drill.bound()), 120.0, POLL_S
        )
        assert install.host[OPERATOR].process.poll() is not None, "the operator was started again meanwhile"

        restarted = time.monotonic()
        install.run_on_host(OPERATOR)
        drill.fault_ends()

        def converged() -> float | None:
            """When the operator is found to have re-converged (None before)."""
            status, again = cp.request(f"{DEPLOYMENTS}/pod-grouper")
            done = (
                status == 200
                and again["spec"] == pod_grouper["spec"]
                and get(cp, SCHEDULER_CONFIG)["data"] == scheduler_config
                and _queue_controller_resources(cp) == second
                and _config_converged(cp)
            )
            return time.monotonic() if done else None

        with ThreadPoolExecutor(1) as watching:  # the workload is judged meanwhile, not after
            convergence = watching.submit(wait_until, "the operator to re-converge", converged, TIMEOUT_S, POLL_S)
            drill.finish(next(judged for judged in drill.kais if judged.component == SCHEDULER))
            done = convergence.result()
        after = _rendered(cp)
        was = {key: rendered.get(key, ("", "")) for key in after}
        remade = sorted(f"{kind}/{name}" for (kind, name), (uid, _) in after.items() if uid != was[(kind, name)][0])
        touched = {("Deployment", "pod-grouper"), ("Deployment", "queue-controller"), ("ConfigMap", SCHEDULER)}
        rewritten = sorted(f"{k}/{n}" for (k, n), now in after.items() if (k, n) not in touched and now != was[(k, n)])
        leases_after = _names(cp, LEASES)
        rotated = sorted(name for name, value in _trust(cp).items() if value != trust[name])
        print(
            f"drill operator_killed recovery_s={done - restarted:.1f} down_s={restarted - killed:.1f} "
            f"kill_to_converged_s={done - killed:.1f} rendered_at_kill={'yes' if rendered_at_kill else 'no'} "
            f"objects={len(after)} remade={len(remade)} rewritten={len(rewritten)} leases={len(leases_after)} "
            f"rotated={len(rotated)}"
        )
        assert set(after) == set(rendered), f"gone: {set(rendered) - set(after)}; new: {set(after) - set(rendered)}"
        assert remade == ["Deployment/pod-grouper"], f"made again: {remade}"
        assert rewritten == [], f"rewritten by the restarted operator though it renders them as before: {rewritten}"
        assert leases_after == leases and _names(cp, RENDERED_KINDS["Secret"]) == secrets
        assert rotated == [], f"the CA or the serving certificate changed: {rotated}"
    finally:
        delete_nodes(cp, pool)
        cp.kubectl("delete", "queue", queue_name, "--ignore-not-found", "--wait=false", check=False)
        if install.host[OPERATOR].process.poll() is not None:
            install.run_on_host(OPERATOR)
        _set_queue_controller_resources(cp, None)
        wait_until(
            "the operator to render the Config as it was",
            lambda: _queue_controller_resources(cp) == {} and _config_converged(cp),
            TIMEOUT_S,
            POLL_S,
        )
    assert get(cp, CONFIG)["spec"] == config_spec
