"""The informer: watch events applied to the store, the re-list difference, decoding, and its run loop.

The run loop is driven here by a scripted server (httpx's in-process MockTransport) because a real API server cannot
be made to answer HTTP 410 or garbage on demand; its behaviour on the real one is in tests/e2e/kube.
"""

import asyncio
import copy
import gc
import gzip
import json
import zlib

import httpx2 as httpx
import msgspec
import pytest

from kai.cluster.kube import decode
from kai.cluster.kube.decode import Decoder, decode_status
from kai.cluster.kube.errors import ApiError, Gone
from kai.cluster.kube.informer import Informer, InformerState, InformerStats, apply_event, replace_changes
from kai.cluster.kube.resources import KINDS
from kai.cluster.kube.runtime import Dispatcher
from kai.cluster.kube.transport import Transport
from kai.core.model.objects import parse_pod

POD, QUEUE = KINDS["Pod"], KINDS["Queue"]


def pod(name, rv, namespace="ns", **spec):
    return {"metadata": {"name": name, "namespace": namespace, "resourceVersion": rv}, "spec": spec}


# re-list after 410: what consumers are told


def test_relist_turns_vanished_objects_into_deletions_and_reports_new_and_changed_ones():
    store = {"ns/a": pod("a", "1"), "ns/b": pod("b", "2"), "ns/c": pod("c", "3")}
    fresh = {"ns/b": pod("b", "2"), "ns/c": pod("c", "9", nodeName="n1"), "ns/d": pod("d", "10")}
    assert replace_changes(store, fresh) == [
        (pod("a", "1"), True),
        (pod("c", "9", nodeName="n1"), False),
        (pod("d", "10"), False),
    ]


def test_first_list_is_all_additions_and_an_identical_list_changes_nothing():
    fresh = {"ns/a": pod("a", "1"), "ns/b": pod("b", "2")}
    assert replace_changes({}, fresh) == [(pod("a", "1"), False), (pod("b", "2"), False)]
    assert replace_changes(fresh, dict(fresh)) == []


def test_relist_of_an_empty_cluster_deletes_everything():
    store = {"ns/a": pod("a", "1")}
    assert replace_changes(store, {}) == [(pod("a", "1"), True)]


# watch events


def test_added_modified_deleted_update_the_store_and_the_resume_point():
    state = InformerState()
    assert apply_event(POD, state, "ADDED", pod("a", "5")) == (pod("a", "5"), False)
    assert apply_event(POD, state, "MODIFIED", pod("a", "6", nodeName="n")) == (pod("a", "6", nodeName="n"), False)
    assert state.store == {"ns/a": pod("a", "6", nodeName="n")}
    assert state.resource_version == "6"
    assert apply_event(POD, state, "DELETED", pod("a", "7")) == (pod("a", "7"), True)
    assert state == InformerState(store={}, resource_version="7")


def test_a_bookmark_only_moves_the_resume_point():
    state = InformerState(store={"ns/a": pod("a", "5")}, resource_version="5")
    assert apply_event(POD, state, "BOOKMARK", {"metadata": {"resourceVersion": "42"}}) is None
    assert state == InformerState(store={"ns/a": pod("a", "5")}, resource_version="42")


def test_a_deletion_of_an_unknown_object_is_still_reported():
    state = InformerState()
    assert apply_event(POD, state, "DELETED", pod("x", "3")) == (pod("x", "3"), True)
    assert state.store == {}


def test_an_error_event_with_code_410_raises_gone_and_leaves_the_state_alone():
    state = InformerState(store={"q1": {"metadata": {"name": "q1"}}}, resource_version="5")
    expired = {"kind": "Status", "status": "Failure", "message": "too old resource version: 1 (216)", "code": 410}
    with pytest.raises(Gone, match="too old resource version"):
        apply_event(QUEUE, state, "ERROR", {**expired, "reason": "Expired"})
    with pytest.raises(Gone):
        apply_event(QUEUE, state, "ERROR", expired)  # an older server: the code alone
    assert state == InformerState(store={"q1": {"metadata": {"name": "q1"}}}, resource_version="5")


def test_other_error_events_and_unknown_event_types_raise_api_errors():
    state = InformerState()
    with pytest.raises(ApiError, match="500 InternalError: boom") as caught:
        apply_event(
            QUEUE, state, "ERROR", {"kind": "Status", "code": 500, "reason": "InternalError", "message": "boom"}
        )
    assert not isinstance(caught.value, Gone)
    with pytest.raises(ApiError, match="unknown watch event type 'SURPRISE'"):
        apply_event(QUEUE, state, "SURPRISE", {"metadata": {"name": "q"}})


# decoding


FULL_POD = {
    "metadata": {
        "name": "p1",
        "namespace": "ns",
        "uid": "u1",
        "resourceVersion": "11",
        "creationTimestamp": "2026-01-01T00:00:00Z",
        "labels": {"kai.scheduler/queue": "q"},
        "annotations": {"pod-group-name": "pg"},
        "ownerReferences": [{"kind": "Job", "name": "j"}],
        "managedFields": [{"manager": "kubectl"}],
    },
    "spec": {
        "schedulerName": "kai-scheduler",
        "priorityClassName": "train",
        "nodeSelector": {"gpu": "a100"},
        "affinity": {"nodeAffinity": {"x": 1}},
        "tolerations": [{"key": "k", "operator": "Exists"}],
        "volumes": [
            {"name": "v", "emptyDir": {}},
            {"name": "settings", "configMap": {"name": "s", "defaultMode": 420}},
            {
                "name": "api",
                "projected": {"sources": [{"serviceAccountToken": {"path": "t"}}, {"configMap": {"name": "ca"}}]},
            },
        ],
        "containers": [
            {
                "name": "c",
                "image": "img",
                "env": [
                    {"name": "A", "value": "1"},
                    {"name": "B", "valueFrom": {"secretKeyRef": {"name": "x", "key": "k"}}},
                    {"name": "C", "valueFrom": {"configMapKeyRef": {"name": "e", "key": "k", "optional": True}}},
                ],
                "envFrom": [{"secretRef": {"name": "x"}}, {"configMapRef": {"name": "f"}}],
                "volumeMounts": [{"name": "v", "mountPath": "/v"}, {"name": "settings", "mountPath": "/s"}],
                "resources": {"requests": {"nvidia.com/gpu": "1"}},
                "ports": [{"containerPort": 80, "hostPort": 8080}],
            }
        ],
    },
    "status": {
        "phase": "Pending",
        "nominatedNodeName": "n1",
        "conditions": [{"type": "PodScheduled", "status": "False"}],
        "containerStatuses": [
            {
                "name": "c",
                "image": "i",
                "state": {"running": {"startedAt": "2026-01-01T00:00:00Z"}},
                "resources": {"requests": {"cpu": "2"}},
                "allocatedResources": {"cpu": "2"},
            }
        ],
        "qosClass": "Burstable",
        "podIP": "10.244.0.8",
        "hostIP": "10.240.0.1",
    },
}

PRUNED_POD = {
    "apiVersion": "v1",
    "kind": "Pod",
    "metadata": {k: v for k, v in FULL_POD["metadata"].items() if k != "managedFields"},
    "spec": {
        "schedulerName": "kai-scheduler",
        "priorityClassName": "train",
        "nodeSelector": {"gpu": "a100"},
        "affinity": {"nodeAffinity": {"x": 1}},
        "tolerations": [{"key": "k", "operator": "Exists"}],
        "volumes": [  # only ConfigMap references, what the ConfigMap pre-predicate reads
            {"name": "configmap:s:None", "configMap": {"name": "s"}},
            {"name": "configmap:ca:None", "configMap": {"name": "ca"}},  # a projected source, as what it means here
        ],
        "containers": [
            {
                "name": "c",
                "env": [{"valueFrom": {"configMapKeyRef": {"name": "e", "optional": True}}}],
                "envFrom": [{"configMapRef": {"name": "f"}}],
                "volumeMounts": [{"name": "configmap:s:None"}],
                "resources": {"requests": {"nvidia.com/gpu": "1"}},
                "ports": [{"containerPort": 80, "hostPort": 8080}],
            }
        ],
    },
    "status": {
        "phase": "Pending",
        "nominatedNodeName": "n1",
        "conditions": [{"type": "PodScheduled", "status": "False"}],
        "containerStatuses": [  # only what an in-place resize is charged from
            {"name": "c", "resources": {"requests": {"cpu": "2"}}, "allocatedResources": {"cpu": "2"}}
        ],
        "qosClass": "Burstable",
        "podIP": "10.244.0.8",  # the operator routes the scheduler Service to the leader's
    },
}


def test_pods_decode_to_the_fields_the_scheduler_reads_in_the_api_shape():
    assert Decoder(POD).object(json.dumps(FULL_POD).encode()) == PRUNED_POD


def test_nodes_keep_allocatable_taints_and_conditions_but_not_images():
    node = {
        "metadata": {"name": "n1", "labels": {"nvidia.com/gpu.memory": "40960"}, "managedFields": []},
        "spec": {"taints": [{"key": "k", "effect": "NoSchedule"}], "podCIDR": "10.0.0.0/24", "unschedulable": True},
        "status": {
            "allocatable": {"nvidia.com/gpu": "8"},
            "capacity": {"nvidia.com/gpu": "8"},
            "conditions": [{"type": "Ready", "status": "True"}],
            "images": [{"names": ["big"], "sizeBytes": 1}],
            "nodeInfo": {"kubeletVersion": "v1.35.4"},
        },
    }
    assert Decoder(KINDS["Node"]).object(json.dumps(node).encode()) == {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": "n1", "labels": {"nvidia.com/gpu.memory": "40960"}},
        "spec": {"taints": [{"key": "k", "effect": "NoSchedule"}], "unschedulable": True},
        "status": {
            "allocatable": {"nvidia.com/gpu": "8"},
            "capacity": {"nvidia.com/gpu": "8"},
            "conditions": [{"type": "Ready", "status": "True"}],
        },
    }


def test_other_kinds_decode_whole_except_managed_fields():
    queue = {"metadata": {"name": "q", "managedFields": [{}]}, "spec": {"resources": {"gpu": {"quota": 2}}}, "x": 1}
    assert Decoder(QUEUE).object(json.dumps(queue).encode()) == {
        "apiVersion": "scheduling.run.ai/v2",
        "kind": "Queue",
        "metadata": {"name": "q"},
        "spec": {"resources": {"gpu": {"quota": 2}}},
        "x": 1,
    }


def test_a_list_page_gives_items_resource_version_and_continue_token():
    page = {"kind": "PodList", "metadata": {"resourceVersion": "77", "continue": "tok"}, "items": [FULL_POD]}
    assert Decoder(POD).page(json.dumps(page).encode()) == ([PRUNED_POD], "77", "tok")
    empty = {"kind": "PodList", "metadata": {"resourceVersion": "78"}, "items": None}
    assert Decoder(POD).page(json.dumps(empty).encode()) == ([], "78", "")


def test_what_pods_have_the_same_of_is_one_object_shared_between_their_views():
    """Tolerations, containers, labels, annotations, owner references, a status of phase and QoS class only and the
    common strings: decoded once, however many of an informer's pods have them."""
    other = copy.deepcopy(FULL_POD) | {"metadata": FULL_POD["metadata"] | {"name": "p2", "uid": "u2"}}
    other["spec"]["tolerations"] = [{"key": "k", "operator": "Equal", "value": "v"}]
    other["metadata"]["labels"] = {"kai.scheduler/queue": "q", "app": "other"}
    page = {"metadata": {"resourceVersion": "77"}, "items": [FULL_POD, copy.deepcopy(FULL_POD), other]}
    (first, second, third), _, _ = Decoder(POD, shared=True).page(json.dumps(page).encode())
    assert first == second == PRUNED_POD
    for section, key in (("spec", "tolerations"), ("spec", "containers"), ("metadata", "labels")):
        assert first[section][key] is second[section][key]
    for key in ("annotations", "ownerReferences"):
        assert first["metadata"][key] is second["metadata"][key] is third["metadata"][key]
    assert third["spec"]["tolerations"] == [{"key": "k", "operator": "Equal", "value": "v"}]
    assert third["metadata"]["labels"] == {"kai.scheduler/queue": "q", "app": "other"}
    assert first["spec"]["containers"][0]["resources"] is third["spec"]["containers"][0]["resources"]
    assert first["metadata"]["labels"]["kai.scheduler/queue"] is third["metadata"]["labels"]["kai.scheduler/queue"]
    for section, key in (("metadata", "namespace"), ("spec", "schedulerName"), ("status", "qosClass")):
        assert first[section][key] is third[section][key]
    pending = {"metadata": {"name": "p", "namespace": "ns"}, "spec": {}, "status": {"phase": "Pending"}}
    a, b = (Decoder(POD, shared=True).object(json.dumps(pending).encode()) for _ in range(2))
    assert a["status"] == b["status"] == {"phase": "Pending"}
    (c, d), _, _ = Decoder(POD, shared=True).page(json.dumps({"items": [pending, pending]}).encode())
    assert c["status"] is d["status"]
    assert first["status"] is not second["status"]  # conditions, a nominated node: the pod's own


def test_what_a_call_hands_its_caller_shares_nothing_with_other_objects():
    """The caller may change it (the informer's views are never changed in place, a caller's copy may be)."""
    decoder = Decoder(POD)
    first, second = (decoder.object(json.dumps(FULL_POD).encode()) for _ in range(2))
    first["metadata"]["labels"]["app"] = "changed"
    first["spec"]["tolerations"].append({"key": "x"})
    first["spec"]["containers"][0]["resources"]["requests"]["cpu"] = "1"
    first["spec"]["containers"][0]["envFrom"].clear()
    assert second == decoder.object(json.dumps(FULL_POD).encode()) == PRUNED_POD


@pytest.mark.parametrize("indent", [None, 2])
def test_a_list_decoded_as_it_arrives_is_the_list_decoded_whole_however_it_is_cut(indent):
    """Items whose own lists hold objects that start with the items' first key (a cut there is inside an item), in
    compact JSON as the API server writes it and pretty-printed (no cut found: decoded whole at the end)."""
    tricky = copy.deepcopy(FULL_POD)
    tricky["metadata"]["annotations"] = {"note": '},{"metadata":{"name":"not-an-item"}}'}
    tricky["spec"]["containers"][0]["ports"] = [{"metadata": 1}, {"metadata": 2}]  # },{"metadata": inside an item
    items = [FULL_POD | {"metadata": FULL_POD["metadata"] | {"name": f"p{i}"}} for i in range(5)] + [tricky]
    body = json.dumps({"kind": "PodList", "metadata": {"resourceVersion": "9", "continue": "t"}, "items": items})
    data = json.dumps(json.loads(body), indent=indent, separators=None if indent else (",", ":")).encode()
    whole = Decoder(POD).page(data)
    for size in (1, 3, 64, 1000, len(data)):
        stream = Decoder(POD).list_stream()
        for start in range(0, len(data), size):
            stream.feed(data[start : start + size])
        assert stream.end() == whole
    assert len(whole[0]) == 6 and whole[1:] == ("9", "t")
    empty = Decoder(POD).list_stream()
    empty.feed(b'{"metadata":{"resourceVersion":"3"},"items":[]}')
    assert empty.end() == ([], "3", "")
    garbled = Decoder(POD).list_stream()
    garbled.feed(b"<html>proxy error</html>")
    with pytest.raises(msgspec.DecodeError):
        garbled.end()


def test_a_compressed_body_is_given_back_whole_a_part_at_a_time(monkeypatch):
    monkeypatch.setattr(decode, "DECOMPRESSED_PART", 1000)
    data = json.dumps([FULL_POD] * 50).encode()
    for encoding, packed in (("gzip", gzip.compress(data)), ("deflate", zlib.compress(data)), ("", data)):
        pieces = [packed[i : i + 97] for i in range(0, len(packed), 97)]
        parts = list(decode.decompressed(pieces, encoding))
        assert b"".join(parts) == data and max(map(len, parts)) <= 1000
    with pytest.raises(msgspec.DecodeError, match="'br' encoding"):
        list(decode.decompressed([b"x"], "br"))


def test_watch_lines_decode_objects_bookmarks_and_errors():
    decoder = Decoder(POD)
    assert decoder.watch_line(json.dumps({"type": "MODIFIED", "object": FULL_POD})) == ("MODIFIED", PRUNED_POD)
    bookmark = {"type": "BOOKMARK", "object": {"kind": "Pod", "metadata": {"resourceVersion": "99"}}}
    assert decoder.watch_line(json.dumps(bookmark)) == ("BOOKMARK", {"metadata": {"resourceVersion": "99"}})
    status = {"kind": "Status", "status": "Failure", "reason": "Expired", "code": 410}
    assert decoder.watch_line(json.dumps({"type": "ERROR", "object": status})) == ("ERROR", status)


def test_a_status_body_is_recognised_and_anything_else_is_not():
    assert decode_status(b'{"kind":"Status","code":404,"reason":"NotFound"}') == {
        "kind": "Status",
        "code": 404,
        "reason": "NotFound",
    }
    assert decode_status(b"404 page not found") is None
    assert decode_status(b'{"kind":"Pod"}') is None


# the run loop, against a scripted server


def queue_obj(name, rv):
    return {"metadata": {"name": name, "resourceVersion": rv}, "spec": {}}


def typed(obj):
    return {"apiVersion": "scheduling.run.ai/v2", "kind": "Queue", **obj}


def listing(rv, *items, token=""):
    meta = {"resourceVersion": rv, **({"continue": token} if token else {})}
    body = json.dumps({"metadata": meta, "items": list(items)}).encode()
    return httpx.Response(200, stream=httpx.ByteStream(body))  # not read yet, as an answer off the wire


def watching(*events):
    lines = [json.dumps({"type": kind, "object": obj}) for kind, obj in events]
    return httpx.Response(200, content="\n".join(lines).encode())


def expired(code=410):
    body = {"kind": "Status", "status": "Failure", "reason": "Expired", "code": 410, "message": "too old"}
    return httpx.Response(code, content=json.dumps(body).encode())


LIST, CONTINUE = {"limit": "2"}, {"limit": "2", "continue": "c1"}
FIRST_LIST = LIST | {"resourceVersion": "0"}
"""The first list is served from the API server's watch cache; a re-list is a consistent read."""


def watch_from(rv):
    return {"watch": "true", "resourceVersion": rv, "allowWatchBookmarks": "true", "timeoutSeconds": "300"}


def run_against(kind, script, **options):
    """Runs an informer of ``kind`` against ``script`` (responses in order, then empty watches, each backed off as a
    "very short watch") until one request past the script; returns it, whether it was synced, the requests'
    parameters and the emitted changes."""
    requests, changes = [], []

    def handler(request):
        requests.append(dict(request.url.params))
        return script[len(requests) - 1] if len(requests) <= len(script) else watching()

    async def go():
        client = httpx.AsyncClient(transport=httpx.MockTransport(handler), base_url="https://api")
        informer = Informer(
            kind,
            Transport(client),
            lambda k, obj, deleted: changes.append((k, obj["metadata"]["name"], deleted)),
            first_backoff_s=0.0,
            **{"max_backoff_s": 0.0, **options},
        )
        task = asyncio.create_task(informer.run())
        while len(requests) <= len(script):
            await asyncio.sleep(0)
        synced_then = informer.synced.is_set()
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
        await client.aclose()
        return informer, synced_then

    informer, synced = asyncio.run(go())
    return informer, synced, requests, changes


def test_the_run_loop_pages_watches_resumes_and_relists_after_410_or_a_bad_answer():
    """A scripted server: a 2-page LIST, a watch that ends after a bookmark, an HTTP 410, a garbled LIST, a good one,
    a watch ending in an ERROR 410 event, a last LIST and an empty watch. Requests and emitted changes are exact."""
    script = [
        (FIRST_LIST, listing("10", queue_obj("a", "1"), token="c1")),
        (CONTINUE, listing("10", queue_obj("b", "2"))),
        (
            watch_from("10"),
            watching(("ADDED", queue_obj("c", "11")), ("BOOKMARK", {"metadata": {"resourceVersion": "15"}})),
        ),
        (watch_from("15"), expired()),
        (LIST, httpx.Response(200, content=b"<html>proxy error</html>")),
        (LIST, listing("20", queue_obj("b", "2"), queue_obj("d", "20"))),
        (watch_from("20"), watching(("MODIFIED", queue_obj("d", "21")), ("ERROR", json.loads(expired().content)))),
        (LIST, listing("30", queue_obj("d", "21"))),
    ]
    gc.unfreeze()
    informer, _, requests, changes = run_against(QUEUE, [response for _, response in script], page_size=2)
    assert gc.get_freeze_count() > 0, "the first list's objects are frozen out of the cyclic GC"
    gc.unfreeze()
    assert requests[: len(script)] == [params for params, _ in script]
    assert requests[len(script)] == watch_from("30")
    assert changes == [
        ("Queue", "a", False),
        ("Queue", "b", False),
        ("Queue", "c", False),
        ("Queue", "a", True),  # gone during the gap: re-list after the HTTP 410
        ("Queue", "c", True),
        ("Queue", "d", False),
        ("Queue", "d", False),  # MODIFIED to 21
        ("Queue", "b", True),  # re-list after the ERROR event
    ]
    assert informer.state.store == {"d": typed(queue_obj("d", "21"))}
    # errors: the garbled LIST, then the last, empty watch (a "very short watch", backed off)
    assert informer.stats == InformerStats(lists=3, pages=4, watches=4, expired=2, errors=2, events=8)
    assert informer.synced.is_set()


def not_served():
    body = {"kind": "Status", "status": "Failure", "reason": "NotFound", "code": 404, "message": "not found"}
    return httpx.Response(404, content=json.dumps(body).encode())


def test_an_optional_kind_whose_api_is_not_served_is_synced_empty_and_looked_for_again():
    """A NodeResourceTopology CRD not installed: the scheduler starts (synced, no objects) and picks the objects up
    once the API is served; a kind kai needs keeps retrying and never syncs."""
    topology = {"metadata": {"name": "n1", "resourceVersion": "5"}, "zones": []}
    _, synced, requests, changes = run_against(
        KINDS["NodeResourceTopology"], [not_served(), not_served(), listing("5", topology)]
    )
    gc.unfreeze()
    assert synced and changes == [("NodeResourceTopology", "n1", False)]
    assert [r.get("watch") for r in requests[:4]] == [None, None, None, "true"]
    _, synced, _, changes = run_against(QUEUE, [not_served(), not_served()])
    assert not synced and changes == []


# the listeners' thread


def test_a_replay_is_delivered_before_wait_delivered_returns_and_a_listener_may_call_it():
    """What ``KubeCluster.subscribe`` waits on: a component starts on whole caches, not on part of a replay."""
    dispatcher = Dispatcher()
    seen = []

    def listener(kind, obj, deleted):
        dispatcher.wait_delivered()  # on the listeners' own thread: returns at once instead of waiting for itself
        seen.append((kind, obj["metadata"]["name"], deleted))

    dispatcher.add("Pod", listener, [pod(f"p{i}", str(i)) for i in range(5000)])
    dispatcher.publish("Pod", pod("p0", "5001"), True)
    dispatcher.wait_delivered()
    assert len(seen) == 5001
    assert seen[0] == ("Pod", "p0", False) and seen[-1] == ("Pod", "p0", True)
    dispatcher.stop()
    dispatcher.wait_delivered()  # stopped: nothing to wait for


def test_a_pruned_pod_keeps_every_config_map_reference_the_scheduler_reads():
    assert parse_pod(Decoder(POD).object(json.dumps(FULL_POD).encode())).config_maps == ("f", "s")
