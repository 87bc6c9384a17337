"""kai operator: a Config and SchedulingShards → the objects KAI's operator deploys, reconciled on the embedded
cluster (the same port a real API server sits behind)."""

import datetime
import threading
import time
from collections.abc import Callable
from typing import Any

import yaml

from kai.cluster.kube.resources import kind_of
from kai.cluster.memory import MemoryCluster
from kai.components.operator import certs
from kai.components.operator.loop import operate
from kai.components.operator.rbac import CLUSTER_RULES
from kai.components.operator.reconciler import Reconciler
from kai.components.operator.settings import Image
from kai.components.scheduler.node_pool import NodePool
from kai.components.shared.components import COMPONENTS
from kai.core.config import parse_config

NS = "kai-scheduler"
IMAGE = Image("registry.example", "kai", "0.1.0")


def config(spec: dict[str, Any] | None = None) -> dict[str, Any]:
    meta = {"name": "kai-config", "uid": "config-uid", "generation": 1}
    return {"apiVersion": "kai.scheduler/v1", "kind": "Config", "metadata": meta, "spec": spec or {}}


def shard(name: str = "default", spec: dict[str, Any] | None = None) -> dict[str, Any]:
    meta = {"name": name, "uid": f"{name}-uid", "generation": 1}
    return {"apiVersion": "kai.scheduler/v1", "kind": "SchedulingShard", "metadata": meta, "spec": spec or {}}


class Counting(MemoryCluster):
    def __init__(self, objects: list[dict[str, Any]]) -> None:
        super().__init__(objects)
        self.applied: list[tuple[str, str]] = []

    def apply(self, kind: str, obj: dict[str, Any]) -> dict[str, Any]:
        self.applied.append((kind, obj["metadata"]["name"]))
        return super().apply(kind, obj)


def reconciled(*objects: dict[str, Any]) -> Counting:
    cluster = Counting(list(objects))
    Reconciler(cluster, IMAGE).reconcile()
    return cluster


def scheduler_config(cluster: MemoryCluster, name: str = "default") -> dict[str, Any]:
    config_map = cluster.get("ConfigMap", f"{NS}/kai-scheduler-{name}")
    assert config_map is not None
    return dict(yaml.safe_load(config_map["data"]["config.yaml"]))


def plugin_names(conf: dict[str, Any]) -> list[str]:
    return [p["name"] for p in conf["tiers"][0]["plugins"]]


def condition(cluster: MemoryCluster, kind: str, name: str, kind_of_condition: str) -> dict[str, Any]:
    obj = cluster.get(kind, name)
    assert obj is not None
    return next(c for c in obj["status"]["conditions"] if c["type"] == kind_of_condition)


# ------------------------------------------------------------------------------------------- shards


def test_default_shard_renders_kais_operator_config_that_the_scheduler_parses():
    cluster = reconciled(config(), shard())
    conf = scheduler_config(cluster)
    assert conf["actions"] == "allocate, consolidation, reclaim, preempt, stalegangeviction"
    assert plugin_names(conf) == [
        "predicates", "proportion", "priority", "nodeavailability", "resourcetype", "podaffinity", "elastic",
        "kubeflow", "ray", "subgrouporder", "taskorder", "nominatednode", "dynamicresources", "minruntime",
        "topology", "snapshot", "sg-nodelocalgreedy", "sg-multinodegang", "gpupack", "nodeplacement",
        "gpusharingorder",
    ]  # fmt: skip
    nodeplacement = next(p for p in conf["tiers"][0]["plugins"] if p["name"] == "nodeplacement")
    assert nodeplacement["arguments"] == {"gpu": "binpack", "cpu": "binpack"}
    assert parse_config(conf).actions[0] == "allocate"


def test_spread_preset_uses_gpuspread_and_drops_consolidation():
    cluster = reconciled(config(), shard(spec={"placementStrategy": {"gpu": "spread", "cpu": "spread"}}))
    conf = scheduler_config(cluster)
    assert "consolidation" not in conf["actions"]
    names = plugin_names(conf)
    assert "gpuspread" in names and "gpupack" not in names and "gpusharingorder" not in names


def test_overrides_merge_field_by_field_as_kai_does():
    """The NVCF seed's values: arguments replace the defaults; enabled is merged alone; priority reorders."""
    spec = {
        "plugins": {"nodeplacement": {"arguments": {"gpu": "binpack", "cpu": "spread"}}, "elastic": {"priority": 50}},
        "actions": {"preempt": {"enabled": False}, "consolidation": {"enabled": False}},
        "kValue": 2.5,
        "minRuntime": {"preemptMinRuntime": "10m"},
        "queueDepthPerAction": {"allocate": 20},
    }
    conf = scheduler_config(reconciled(config(), shard(spec=spec)))
    assert conf["actions"] == "allocate, reclaim, stalegangeviction"
    plugins = {p["name"]: p.get("arguments") for p in conf["tiers"][0]["plugins"]}
    assert plugins["nodeplacement"] == {"gpu": "binpack", "cpu": "spread"}
    assert plugins["proportion"] == {"kValue": "2.5"}
    assert plugins["minruntime"] == {"defaultPreemptMinRuntime": "10m"}
    assert plugin_names(conf)[-1] == "elastic"  # priority 50: after gpusharingorder (100)
    assert conf["queueDepthPerAction"] == {"allocate": 20}


def test_a_bad_shard_is_reported_on_its_field_and_the_other_shards_still_run():
    bad = shard("a100", {"queueDepthPerAction": {"preempt": 5}, "actions": {"preempt": {"enabled": False}}})
    cluster = reconciled(config(), shard(), bad)
    deployed = condition(cluster, "SchedulingShard", "a100", "Deployed")
    assert deployed["status"] == "False" and deployed["reason"] == "InvalidConfiguration"
    assert "spec.queueDepthPerAction.preempt" in deployed["message"]
    assert cluster.get("Deployment", f"{NS}/kai-scheduler-a100") is None
    assert cluster.get("Deployment", f"{NS}/kai-scheduler-default") is not None


def test_an_unknown_plugin_is_named_on_the_shard():
    cluster = reconciled(config(), shard(spec={"plugins": {"mycustom": {"priority": 1050}}}))
    message = condition(cluster, "SchedulingShard", "default", "Deployed")["message"]
    assert "spec.plugins" in message and "mycustom" in message


def test_each_shard_runs_its_own_scheduler_on_its_node_pool():
    cluster = reconciled(config(), shard(), shard("h100", {"partitionLabelValue": "h100"}))
    deployment = cluster.get("Deployment", f"{NS}/kai-scheduler-h100")
    assert deployment is not None
    args = deployment["spec"]["template"]["spec"]["containers"][0]["args"]
    assert "--partition-label-value=h100" in args and "--nodepool-label-key=kai.scheduler/node-pool" in args
    assert deployment["metadata"]["ownerReferences"][0]["name"] == "h100"  # deleted with its shard
    pool = NodePool("kai.scheduler/node-pool", "h100")
    labelled = {"metadata": {"labels": {"kai.scheduler/node-pool": "h100"}}}
    assert pool.holds("Node", labelled) and not pool.holds("Node", {"metadata": {}})
    assert NodePool().holds("Queue", {"metadata": {}}) and not NodePool().holds("Queue", labelled)
    assert pool.holds("Pod", {"metadata": {}})  # pods follow their PodGroup, not the label


def test_the_schedulers_probes_stay_off_its_plugin_server_port():
    """The scheduler keeps KAI's plugin server on 127.0.0.1:8081, so its probes (flag, container port and the
    kubelet's checks) are on 8082: the process could not bind both to 8081."""
    cluster = reconciled(config(), shard())
    deployment = cluster.get("Deployment", f"{NS}/kai-scheduler-default")
    assert deployment is not None
    container = deployment["spec"]["template"]["spec"]["containers"][0]
    assert "--health-probe-bind-address=:8082" in container["args"]
    assert not any(arg.startswith("--plugin-server-port") for arg in container["args"])  # KAI's 8081
    assert {"name": "probe", "containerPort": 8082} in container["ports"]
    assert container["readinessProbe"]["httpGet"]["port"] == container["livenessProbe"]["httpGet"]["port"] == 8082


# ------------------------------------------------------------------------------------------- the Config


def test_config_deploys_every_component_with_kais_names_and_labels():
    cluster = reconciled(config(), shard())
    names = {d["metadata"]["name"]: d for d in cluster.list("Deployment")}
    assert set(names) == {
        "admission", "binder", "pod-grouper", "podgroup-controller", "queue-controller", "kai-scheduler-default",
    }  # fmt: skip
    for name, deployment in names.items():
        template = deployment["spec"]["template"]
        assert template["metadata"]["labels"]["app"] == name
        container = template["spec"]["containers"][0]
        assert container["image"] == "registry.example/kai:0.1.0"
        assert container["securityContext"]["runAsNonRoot"] is True
    assert names["kai-scheduler-default"]["spec"]["template"]["spec"]["serviceAccountName"] == "scheduler"
    assert condition(cluster, "Config", "kai-config", "Deployed")["status"] == "True"
    assert condition(cluster, "Config", "kai-config", "Available")["status"] == "False"  # nothing runs them here


def test_the_binder_keeps_reservation_pods_in_the_configs_namespace():
    cluster = reconciled(config({"binder": {"resourceReservation": {"namespace": "gpu-holders"}}}), shard())
    args = cluster.get("Deployment", f"{NS}/binder")["spec"]["template"]["spec"]["containers"][0]["args"]
    assert "--resource-reservation-namespace=gpu-holders" in args
    assert _allows(CLUSTER_RULES["binder"], "", "namespaces", "create")  # it makes that namespace if missing
    assert not _allows(CLUSTER_RULES["binder"], "", "namespaces", "delete")


def test_client_limits_and_concurrency_come_from_the_config_where_set():
    spec = {
        "binder": {"maxConcurrentReconciles": 40, "service": {"k8sClientConfig": {"qps": 200, "burst": 400}}},
        "podGrouper": {"maxConcurrentReconciles": 20, "k8sClientConfig": {"qps": 100}},
        "queueController": {"service": {"k8sClientConfig": {"burst": 500}}},
    }
    cluster = reconciled(config(spec), shard("default", {"args": {"qps": "300", "burst": "600"}}))

    def args(name: str) -> list[str]:
        return list(cluster.get("Deployment", f"{NS}/{name}")["spec"]["template"]["spec"]["containers"][0]["args"])

    assert {"--qps=200", "--burst=400", "--max-concurrent-reconciles=40"} <= set(args("binder"))
    assert {"--qps=100", "--max-concurrent-reconciles=20"} <= set(args("pod-grouper"))
    queue_controller = [a for a in args("queue-controller") if a.startswith(("--qps", "--burst"))]
    assert queue_controller == ["--burst=500"]  # KAI would add its default --qps=20 (#2027): kai's binary's holds
    assert {"--qps=300", "--burst=600"} <= set(args("kai-scheduler-default"))
    for name in ("podgroup-controller", "admission"):  # unset: the binaries' own limits (docs/deviations.md)
        assert [a for a in args(name) if a.startswith(("--qps", "--burst"))] == []
    unset = [a for a in args("podgroup-controller") + args("admission") if a.startswith("--max")]
    assert unset == []  # the binaries' own default (10) applies
    plain = reconciled(config(), shard())
    grouper = plain.get("Deployment", f"{NS}/pod-grouper")["spec"]["template"]["spec"]["containers"][0]["args"]
    assert [a for a in grouper if a.startswith(("--qps", "--burst"))] == []  # no default: its binary's


def test_in_place_resize_admission_follows_the_config():
    """KAI #2021's ``admission.inPlacePodResize``: quota checks on by default, the strict block off."""

    def admission_args(spec: dict[str, Any] | None) -> list[str]:
        cluster = reconciled(config(spec), shard())
        container = cluster.get("Deployment", f"{NS}/admission")["spec"]["template"]["spec"]["containers"][0]
        return [a for a in container["args"] if "resize" in a or "upsize" in a]

    assert admission_args(None) == []
    strict = {"admission": {"inPlacePodResize": {"validateQuota": False, "blockUpsizeOnBoundedQueues": True}}}
    assert admission_args(strict) == ["--validate-pod-resize-quota=false", "--block-upsize-on-bounded-queues=true"]


def test_device_access_admission_follows_the_config():
    """KAI's ``admission.blockNvidiaVisibleDevices``, off by default."""

    def admission_args(spec: dict[str, Any] | None) -> list[str]:
        cluster = reconciled(config(spec), shard())
        container = cluster.get("Deployment", f"{NS}/admission")["spec"]["template"]["spec"]["containers"][0]
        return [a for a in container["args"] if "visible-devices" in a]

    assert admission_args(None) == []
    assert admission_args({"admission": {"blockNvidiaVisibleDevices": True}}) == ["--block-nvidia-visible-devices=true"]


def test_a_shards_full_hierarchy_fairness_arg_reaches_its_scheduler_and_others_are_named_as_ignored():
    """KAI's reclaim e2e sets ``full-hierarchy-fairness`` in the shard's args; a flag kai's scheduler lacks is said."""
    cluster = reconciled(config(), shard("default", {"args": {"full-hierarchy-fairness": "false", "v": "4"}}))
    container = cluster.get("Deployment", f"{NS}/kai-scheduler-default")["spec"]["template"]["spec"]["containers"][0]
    assert "--full-hierarchy-fairness=false" in container["args"] and not any(
        a.startswith("--v=") for a in container["args"]
    )
    ready = condition(cluster, "SchedulingShard", "default", "Ready")["message"]
    assert "spec.args.v: not a flag kai's scheduler takes; ignored" in ready and "full-hierarchy" not in ready


def test_reconcile_is_idempotent():
    cluster = reconciled(config(), shard())
    before = {kind: [o["metadata"] | {"resourceVersion": ""} for o in cluster.list(kind)] for kind in cluster._store}
    restarted = Reconciler(cluster, IMAGE)  # a new operator applies everything again, to the same objects
    restarted.reconcile()
    after = {kind: [o["metadata"] | {"resourceVersion": ""} for o in cluster.list(kind)] for kind in cluster._store}
    assert after == before
    sent = len(cluster.applied)
    restarted.reconcile()
    assert len(cluster.applied) == sent  # nothing changed: nothing is sent


def _make_available(cluster: MemoryCluster) -> None:
    """What the Deployment controller writes once a Deployment's pods are ready."""
    for deployment in cluster.list("Deployment"):
        replicas = int(deployment["spec"].get("replicas", 1))
        generation = deployment["metadata"].get("generation", 1)
        status = {"observedGeneration": generation, "replicas": replicas, "availableReplicas": replicas}
        cluster.update_status("Deployment", deployment | {"status": status})


def test_a_pass_settles_once_every_deployment_is_available():
    cluster = Counting([config(), shard()])
    reconciler = Reconciler(cluster, IMAGE)
    assert reconciler.reconcile() is False  # made, not available yet: look again soon
    assert condition(cluster, "Config", "kai-config", "Available")["status"] == "False"
    _make_available(cluster)
    assert reconciler.reconcile() is True
    assert condition(cluster, "Config", "kai-config", "Available")["status"] == "True"
    assert condition(cluster, "SchedulingShard", "default", "Ready")["status"] == "True"
    assert Reconciler(Counting([config({"global": {"replicaCount": "two"}})]), IMAGE).reconcile() is True  # waits


class AvailableFromPass(MemoryCluster):
    """Its Deployments become available as the operator's ``available_from``-th pass begins."""

    def __init__(self, objects: list[dict[str, Any]], available_from: int) -> None:
        super().__init__(objects)
        self.passes, self.available_from = 0, available_from

    def list(self, kind: str) -> list[dict[str, Any]]:
        if kind == "SchedulingShard":  # listed once at the start of each pass
            self.passes += 1
            if self.passes == self.available_from:
                _make_available(self)
        return super().list(kind)


def test_the_loop_tells_a_deployment_became_available_well_before_its_period():
    """The operator does not watch Deployments. Its first pass makes them and writes the Config's status, which wakes
    a second pass (its own write); they become available after that. An unsettled pass is looked at again after
    0.5 s, doubling, so the Config is Available about when its Deployments are, not a period (an hour here) later."""
    cluster = AvailableFromPass([config(), shard()], available_from=3)
    stop = threading.Event()
    loop = threading.Thread(target=operate, args=(cluster, IMAGE, 3600.0, stop), daemon=True)
    loop.start()
    try:
        _poll("the Config to be Available", lambda: _condition_status(cluster, "Available") == "True")
    finally:
        stop.set()
        loop.join(10.0)
    assert not loop.is_alive()
    assert cluster.passes >= 3


def _condition_status(cluster: MemoryCluster, kind_of_condition: str) -> str:
    conditions = ((cluster.get("Config", "kai-config") or {}).get("status") or {}).get("conditions") or []
    return next((str(c["status"]) for c in conditions if c["type"] == kind_of_condition), "")


def _poll(what: str, check: Callable[[], bool], timeout_s: float = 10.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not check():
        assert time.monotonic() < deadline, f"timed out after {timeout_s} s waiting for {what}"
        time.sleep(0.01)


def test_a_bad_config_field_is_named_in_its_condition():
    cluster = reconciled(config({"global": {"replicaCount": "two"}}), shard())
    deployed = condition(cluster, "Config", "kai-config", "Deployed")
    assert deployed["reason"] == "InvalidConfiguration"
    assert "spec.global.replicaCount" in deployed["message"] and "'two'" in deployed["message"]
    assert cluster.list("Deployment") == []


def test_a_turned_off_component_is_removed():
    cluster = reconciled(config(), shard())
    cluster.apply("Config", config({"binder": {"service": {"enabled": False}}}))
    Reconciler(cluster, IMAGE).reconcile()
    assert cluster.get("Deployment", f"{NS}/binder") is None
    assert cluster.get("Deployment", f"{NS}/pod-grouper") is not None


def test_replicas_turn_on_leader_election():
    cluster = reconciled(config({"global": {"replicaCount": 2}}), shard())
    for deployment in cluster.list("Deployment"):
        assert deployment["spec"]["replicas"] == 2
        assert "--leader-elect" in deployment["spec"]["template"]["spec"]["containers"][0]["args"]


# ------------------------------------------------------------------------------------------- default queues


def test_default_queues_follow_the_config_but_keep_a_users_edit():
    unlimited = {r: {"quota": -1, "limit": -1, "overQuotaWeight": 1} for r in ("cpu", "gpu", "memory")}
    cluster = reconciled(config(), shard())
    child = cluster.get("Queue", "default-queue")
    assert child is not None and child["spec"]["parentQueue"] == "default-parent-queue"
    assert child["spec"]["resources"]["gpu"] == {"quota": 0, "limit": -1, "overQuotaWeight": 1}
    child["spec"]["resources"]["gpu"]["limit"] = 4  # the user's edit
    cluster.update("Queue", child)
    Reconciler(cluster, IMAGE).reconcile()
    assert cluster.get("Queue", "default-queue")["spec"]["resources"]["gpu"]["limit"] == 4
    nvcf = {"parentResources": unlimited, "childResources": unlimited}
    cluster.apply("Config", config({"defaultQueue": nvcf}))
    Reconciler(cluster, IMAGE).reconcile()
    for name in ("default-parent-queue", "default-queue"):
        assert cluster.get("Queue", name)["spec"]["resources"] == unlimited


# ------------------------------------------------------------------------------------------- webhooks and TLS


def test_webhooks_trust_the_ca_that_signed_the_serving_certificate():
    from cryptography import x509

    cluster = reconciled(config(), shard())
    serving = cluster.get("Secret", f"{NS}/kai-admission-webhook-tls-secret")
    mutating = cluster.get("MutatingWebhookConfiguration", "mutating-kai-admission")
    assert serving is not None and mutating is not None
    hook = mutating["webhooks"][0]
    assert hook["matchConditions"][0]["expression"] == "object.spec.schedulerName == 'kai-scheduler'"
    assert hook["clientConfig"]["service"] == {
        "namespace": NS, "name": "admission", "path": "/mutate--v1-pod", "port": 443,
    }  # fmt: skip
    import base64

    ca = x509.load_pem_x509_certificate(base64.b64decode(hook["clientConfig"]["caBundle"]))
    cert = x509.load_pem_x509_certificate(base64.b64decode(serving["data"]["tls.crt"]))
    cert.verify_directly_issued_by(ca)
    assert "admission.kai-scheduler.svc" in cert.extensions.get_extension_for_class(
        x509.SubjectAlternativeName
    ).value.get_values_for_type(x509.DNSName)
    validating = {v["metadata"]["name"] for v in cluster.list("ValidatingWebhookConfiguration")}
    assert validating == {"validating-kai-admission", "kai-queue-validation-v2", "kai-podgroup-validation-v2alpha2"}


def test_the_ca_rotates_before_it_expires_with_an_overlap():
    names = ["admission.kai-scheduler.svc"]
    start = datetime.datetime(2026, 1, 1, tzinfo=datetime.UTC)
    first = certs.ensure({}, {}, names, start)
    same = certs.ensure(certs.ca_secret_data(first), certs.serving_secret_data(first), names, start)
    assert same.ca == first.ca and same.serving == first.serving
    later = start + datetime.timedelta(days=certs.CA_DAYS - certs.RENEW_DAYS + 1)
    rotated = certs.ensure(certs.ca_secret_data(first), certs.serving_secret_data(first), names, later)
    assert rotated.ca != first.ca and rotated.serving != first.serving
    assert rotated.bundle == rotated.ca.cert + first.ca.cert  # the old CA is still trusted
    gone = later + datetime.timedelta(days=certs.RENEW_DAYS)
    after = certs.ensure(certs.ca_secret_data(rotated), certs.serving_secret_data(rotated), names, gone)
    assert after.bundle == after.ca.cert


# ------------------------------------------------------------------------------------------- RBAC


def _allows(rules: list[dict[str, Any]], group: str, resource: str, verb: str) -> bool:
    return any(group in r["apiGroups"] and resource in r["resources"] and verb in r["verbs"] for r in rules)


def test_each_deployed_component_has_a_role_that_may_list_and_watch_what_its_informers_watch():
    deployed = {component.operand: component for component in COMPONENTS.values() if component.operand}
    assert set(CLUSTER_RULES) == set(deployed)
    for role, component in deployed.items():
        gated = (*component.dra_watches, *component.numa_watches, *component.disruption_watches)
        for name in (*component.watches, *gated):
            kind = kind_of(name)
            for verb in ("list", "watch"):
                assert _allows(CLUSTER_RULES[role], kind.group, kind.plural, verb), (role, name, verb)


def test_roles_are_least_privilege():
    assert not _allows(CLUSTER_RULES["pod-grouper"], "", "pods", "delete")
    assert not _allows(CLUSTER_RULES["binder"], "scheduling.run.ai", "podgroups", "create")
    assert not _allows(CLUSTER_RULES["queue-controller"], "", "pods", "list")
    assert not any("*" in r["verbs"] or "*" in r["resources"] for rules in CLUSTER_RULES.values() for r in rules)
