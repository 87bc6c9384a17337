"""The kube adapter's informers on a real kube-apiserver: list, watch, resume, re-list after 410 Gone."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator

import pytest
from kube_support import WATCHED, Recorder, key_of, node, pod, podgroup, queue, remove_test_objects, unique, wait_until

from kai.cluster.kube import KubeCluster
from kai.cluster.kube.client import load_config
from kai.cluster.kube.informer import Informer, InformerState
from kai.cluster.kube.resources import KINDS
from kai.cluster.kube.transport import Transport, connect


@pytest.fixture(autouse=True)
def tidy(control_plane, kwok) -> Iterator[None]:
    yield
    remove_test_objects(control_plane.kubeconfig_path)


@pytest.fixture
def writer(control_plane) -> Iterator[KubeCluster]:
    """A client without informers: every read goes to the server."""
    cluster = KubeCluster.from_kubeconfig(control_plane.kubeconfig_path, component="kai-e2e-writer")
    try:
        yield cluster
    finally:
        cluster.close()


def informed(control_plane, **options) -> KubeCluster:
    return KubeCluster.from_kubeconfig(control_plane.kubeconfig_path, kinds=WATCHED, component="kai-e2e", **options)


def test_list_then_watch_delivers_additions_updates_and_deletions_of_every_kind(control_plane, writer, namespace):
    n1, n2, q1, q2 = unique("node"), unique("node"), unique("queue"), unique("queue")
    pg1, pg2, p1, p2 = (f"{namespace}/{unique(p)}" for p in ("pg", "pg", "pod", "pod"))
    keys = {n1, n2, q1, q2, pg1, pg2, p1, p2}

    def name(key: str) -> str:
        return key.split("/")[-1]

    for obj, kind in ((node(n1), "Node"), (queue(q1), "Queue"), (podgroup(namespace, name(pg1), q1), "PodGroup")):
        writer.create(kind, obj)
    writer.create("Pod", pod(namespace, name(p1)))

    recorder = Recorder(keys)
    with informed(control_plane) as cluster:
        cluster.subscribe(recorder)
        assert cluster.wait_for_sync(30)
        wait_until("the listed objects", lambda: all(recorder.of(k) for k in (n1, q1, pg1, p1)))

        writer.create("Node", node(n2))
        writer.create("Queue", queue(q2))
        writer.create("PodGroup", podgroup(namespace, name(pg2), q2))
        writer.create("Pod", pod(namespace, name(p2)))
        writer.patch_merge("Node", n1, {"metadata": {"labels": {"kai.test/zone": "a"}}})
        stored = writer.get("Queue", q1)
        assert stored is not None
        stored["spec"]["priority"] = 7
        writer.update("Queue", stored)
        writer.patch_status("PodGroup", pg1, {"phase": "Running"})
        writer.bind_pod(namespace, name(p1), n1)
        for kind, key in (("Node", n2), ("Queue", q2), ("PodGroup", pg2), ("Pod", p2), ("Pod", p1)):
            writer.delete(kind, key)

        wait_until("every deletion", lambda: all(recorder.deleted(k) for k in (n2, q2, pg2, p2, p1)))

        def seen(key: str, field) -> list[tuple[bool, object]]:
            return [(deleted, field(obj)) for deleted, obj in recorder.of(key)]

        def dedup(changes: list[tuple[bool, object]]) -> list[tuple[bool, object]]:
            return [c for i, c in enumerate(changes) if i == 0 or c != changes[i - 1]]

        # nodes change under KWOK and the node lifecycle controller too (status, taints), as in a cluster
        zone = seen(n1, lambda o: o["metadata"]["labels"].get("kai.test/zone"))
        assert dedup(zone) == [(False, None), (False, "a")]
        assert dedup([(deleted, None) for deleted, _ in recorder.of(n2)]) == [(False, None), (True, None)]
        assert seen(q1, lambda o: o["spec"].get("priority")) == [(False, None), (False, 7)]
        assert seen(pg1, lambda o: o.get("status", {}).get("phase")) == [(False, None), (False, "Running")]
        # a deleted pod first shows its deletionTimestamp (a modification), then goes: at once if unbound, when KWOK
        # (which may have changed its status before, running it) finishes the deletion if bound
        assert dedup(seen(p1, lambda o: o["spec"].get("nodeName"))) == [(False, None), (False, n1), (True, n1)]
        assert seen(p1, lambda o: bool(o["metadata"].get("deletionTimestamp")))[-2:] == [(False, True), (True, True)]
        assert [deleted for deleted, _ in recorder.of(p2)] == [False, False, True]
        for key in (q2, pg2):
            assert [deleted for deleted, _ in recorder.of(key)] == [False, True], key

        # the cache serves reads once synced, and agrees with the changes delivered
        assert cluster.get("Node", n1)["metadata"]["labels"]["kai.test/zone"] == "a"
        assert cluster.get("Queue", q1)["spec"]["priority"] == 7
        assert cluster.get("PodGroup", pg1)["status"]["phase"] == "Running"
        assert cluster.get("Pod", p1) is None
        listed = {key_of(obj) for kind in WATCHED for obj in cluster.list(kind)}
        assert listed & keys == {n1, q1, pg1}
        assert all(i.stats.lists == 1 and i.stats.expired == 0 for i in cluster.informers.values())


def test_a_watch_ended_by_the_server_resumes_from_its_resource_version_without_losing_or_repeating(
    control_plane, writer
):
    names: list[str] = []
    with informed(control_plane, watch_timeout_s=1) as cluster:
        recorder = Recorder()
        cluster.subscribe(recorder)
        assert cluster.wait_for_sync(30)
        stats = cluster.informers["Queue"].stats
        for _ in range(4):
            watches = stats.watches
            batch = [unique("resume") for _ in range(5)]
            names += batch
            for name in batch:
                writer.create("Queue", queue(name))
            wait_until("the server to end the watch and the informer to resume", lambda w=watches: stats.watches > w)

        wait_until("every queue", lambda: all(recorder.of(n) for n in names))
        assert {n: [d for d, _ in recorder.of(n)] for n in names} == {n: [False] for n in names}
        assert (stats.lists, stats.expired) == (1, 0)
        assert stats.watches >= 5


def test_a_stopped_informer_started_again_resumes_where_it_stopped(control_plane, writer, namespace):
    keep, change, drop, new = (f"{namespace}/{unique(p)}" for p in ("keep", "change", "drop", "new"))
    q = unique("queue")
    writer.create("Queue", queue(q))
    for key in (keep, change, drop):
        writer.create("PodGroup", podgroup(namespace, key.split("/")[1], q))
    recorder = Recorder({keep, change, drop, new})
    cluster = KubeCluster.from_kubeconfig(control_plane.kubeconfig_path, kinds=["PodGroup"])
    try:
        cluster.subscribe(recorder)
        cluster.start()
        assert cluster.wait_for_sync(30)
        wait_until("the three podgroups", lambda: len(recorder.changes) == 3)
        cluster.stop()

        writer.patch_status("PodGroup", change, {"phase": "Running"})
        writer.delete("PodGroup", drop)
        writer.create("PodGroup", podgroup(namespace, new.split("/")[1], q))
        assert len(recorder.changes) == 3  # stopped: nothing delivered

        cluster.start()
        wait_until("the changes made while stopped", lambda: len(recorder.changes) >= 6)
        after = [(key, deleted) for _, key, deleted, _ in recorder.changes[3:]]
        assert after == [(change, False), (drop, True), (new, False)]
        stats = cluster.informers["PodGroup"].stats
        assert (stats.lists, stats.watches, stats.expired) == (1, 2, 0)
        assert cluster.get("PodGroup", change)["status"]["phase"] == "Running"
        assert cluster.get("PodGroup", drop) is None
    finally:
        cluster.close()


@pytest.mark.parametrize("kind", ["Queue", "PodGroup"])
def test_a_too_old_resource_version_gets_410_and_the_relist_converges(control_plane, writer, namespace, kind):
    """The informer resumes from resourceVersion 1, long gone on the server: the real API answers 410 Expired, and the
    re-list tells consumers what changed in the gap — including the deletion they never saw."""

    def make(name: str) -> dict:
        return queue(name) if kind == "Queue" else podgroup(namespace, name, "default-queue")

    keep, change, ghost, fresh = (key_of(make(unique(n))) for n in ("keep", "change", "ghost", "fresh"))
    for key in (keep, change, ghost):
        writer.create(kind, make(key.split("/")[-1]))
    snapshot = {key: writer.get(kind, key) for key in (keep, change, ghost)}
    writer.patch_merge(kind, change, {"metadata": {"labels": {"changed": "yes"}}})
    writer.delete(kind, ghost)
    writer.create(kind, make(fresh.split("/")[-1]))

    recorder = Recorder({keep, change, ghost, fresh})
    config = load_config(control_plane.kubeconfig_path)

    async def run() -> Informer:
        transport = Transport(connect(config))
        informer = Informer(
            KINDS[kind], transport, recorder, state=InformerState(store=dict(snapshot), resource_version="1")
        )
        task = asyncio.create_task(informer.run())
        deadline = time.monotonic() + 30
        try:
            while not (informer.stats.lists and recorder.deleted(ghost)):
                assert time.monotonic() < deadline, "timed out waiting for the re-list"
                await asyncio.sleep(0.02)
        finally:
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)
            await transport.aclose()
        return informer

    informer = asyncio.run(run())
    assert (informer.stats.expired, informer.stats.lists) == (1, 1)
    changes = [(key, deleted) for _, key, deleted, _ in recorder.changes]
    assert sorted(changes) == sorted([(ghost, True), (change, False), (fresh, False)])
    assert recorder.of(ghost) == [(True, snapshot[ghost])]
    assert recorder.last(change)["metadata"]["labels"]["changed"] == "yes"
    store = informer.state.store
    assert ghost not in store and {keep, change, fresh} <= store.keys()
    assert store[keep] == snapshot[keep]


def test_reads_go_to_the_server_for_kinds_not_watched_and_lists_follow_continue_tokens(control_plane):
    names = {unique("paged") for _ in range(5)}
    with KubeCluster.from_kubeconfig(control_plane.kubeconfig_path, page_size=2) as cluster:
        for name in names:
            cluster.create("Queue", queue(name))
        listed = [obj["metadata"]["name"] for obj in cluster.list("Queue")]
        assert names <= set(listed)
        assert len(listed) == len(set(listed)) >= 5
        system = {pc["metadata"]["name"]: pc["value"] for pc in cluster.list("PriorityClass")}
        assert system["system-node-critical"] == 2000001000
        assert cluster.get("Queue", sorted(names)[0])["kind"] == "Queue"
        assert cluster.get("Queue", unique("missing")) is None
    cluster.close()  # a second close is harmless
