"""``KubeCluster``: the cluster port (``kai.cluster.port``) on a real Kubernetes API server.

Reads of the watched kinds come from the informers' stores once they are synced (before that, and for kinds not
watched, from the server); ``subscribe`` feeds the same changes a watch gives, as the embedded cluster does. Writes
go straight to the server and return its answer; the cache catches up through the watch (as in client-go, the store
has one source of truth, so it never goes back in time).

``update`` and ``update_status`` of the pruned kinds (pods, nodes: views, see ``decode``) are sent as merge
patches of the caller's changes, conditional on the version read (``patch``). A stale update raises ``Conflict``.

Writes are idempotent where the caller says so: a create with ``idempotent=True`` of an existing object returns the
existing one, a delete of a missing object succeeds, and binding a pod to the node it is already bound to succeeds.
Transient failures are retried by the transport (bounded). ``send_all`` runs a batch of writes concurrently (at
most ``max_in_flight`` at a time) and reports each outcome, so one refusal does not stop the rest (docs/architecture.md
§7, §8).
"""

import asyncio
import builtins
import copy
import time
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

from lightkube.config.kubeconfig import SingleConfig

from kai.cluster.kube import resources as api
from kai.cluster.kube.bulk_load import bulk_load
from kai.cluster.kube.decode import PRUNED_KINDS, Decoder, copy_json, decode_any
from kai.cluster.kube.errors import ApiError, Conflict, NotFound
from kai.cluster.kube.faults import FaultPlan
from kai.cluster.kube.informer import Informer, list_all
from kai.cluster.kube.kubeconfig import load_config
from kai.cluster.kube.patch import view_patch
from kai.cluster.kube.ratelimit import UNLIMITED, Lane, RateLimit, TokenBucket, Waits, Window
from kai.cluster.kube.runtime import Dispatcher, LoopThread
from kai.cluster.kube.transport import DEFAULT_RETRY, RetryPolicy, Transport, connect
from kai.cluster.port import Listener, Raw
from kai.core.model.meta import format_time


class KubeCluster:
    """The cluster port on an API server; see the module docstring. Use as a context manager, or start/close."""

    def __init__(
        self,
        config: SingleConfig,
        *,
        kinds: Iterable[str] = (),
        component: str = "kai",
        page_size: int = 500,
        watch_timeout_s: int = 300,
        max_in_flight: int = 32,
        rate_limit: RateLimit = UNLIMITED,
        timeout_s: float = 30.0,
        retry: RetryPolicy = DEFAULT_RETRY,
        clock: Callable[[], float] = time.time,
        faults: FaultPlan | None = None,
    ) -> None:
        """``faults``: inject API failures (``faults``; default: as ``$KAI_FAULTS`` says, else none). ``rate_limit``:
        the client-side rate limit (``ratelimit``; by default none)."""
        watched = [api.kind_of(name) for name in kinds]  # an unknown kind fails here, before any thread starts
        self.component = component
        self._clock = clock
        self._page_size = page_size
        self._io = LoopThread()
        self.faults = faults if faults is not None else FaultPlan.from_env()
        self._transport = Transport(
            connect(config, timeout_s=timeout_s, faults=self.faults),
            retry,
            limit=TokenBucket(rate_limit.qps, rate_limit.burst),
        )
        self._lane = self._transport.lane
        self._dispatcher = Dispatcher()
        self._in_flight = asyncio.Semaphore(max_in_flight)
        self._decoders = {name: Decoder(kind) for name, kind in api.KINDS.items()}
        self._tasks: list[asyncio.Task[None]] = []
        self.informers = {
            kind.name: Informer(
                kind, self._transport, self._dispatcher.publish, page_size=page_size, watch_timeout_s=watch_timeout_s
            )
            for kind in watched
        }

    def for_component(self, name: str, rate_limit: RateLimit) -> "KubeCluster":
        """This cluster as one component sees it: the same caches, connection and window of requests in flight, with
        a rate limit of its own (so no component's writes wait behind another's) and its requests counted apart.
        Closing it closes them all."""
        view = copy.copy(self)
        view._lane = self._transport.add_lane(name, TokenBucket(rate_limit.qps, rate_limit.burst))
        return view

    @property
    def lanes(self) -> dict[str, Lane]:
        """Each component's lane (``for_component``) and the main one (informers, unscoped requests)."""
        return dict(self._transport.lanes)

    @property
    def window(self) -> Window:
        """The process's window of requests in flight (``ratelimit.Window``): its size and the server's refusals."""
        return self._transport.window

    def request_counts(self) -> dict[tuple[str, str], int]:
        """Requests sent to the API server so far, by (method, status code); see ``Transport.requests``."""
        return dict(self._transport.requests)

    def rate_limit_waits(self) -> dict[str, Waits]:
        """How long requests waited for the client-side rate limit, by verb (``ratelimit``)."""
        waits: dict[str, Waits] = {}
        for lane in self._transport.lanes.values():
            for verb, lane_waits in lane.bucket.waits.items():
                waits.setdefault(verb, Waits()).merge(lane_waits)
        return waits

    @property
    def server(self) -> str:
        """The API server's host:port."""
        return self._transport.host

    @classmethod
    def from_kubeconfig(
        cls, kubeconfig: str | Path | None = None, *, context: str | None = None, **options: Any
    ) -> "KubeCluster":
        return cls(load_config(kubeconfig, context), **options)

    def _decoder(self, name: str) -> Decoder:
        """The decoder of a kind by port name (made on first use for a ``Kind.version.group`` one)."""
        decoder = self._decoders.get(name)
        if decoder is None:
            decoder = self._decoders[name] = Decoder(api.kind_of(name))
        return decoder

    # ------------------------------------------------------------------------------------------- lifecycle

    def start(self) -> None:
        """Starts the informers (again after ``stop``: each resumes its watch where it stopped)."""

        async def start() -> None:
            self._tasks += [asyncio.create_task(informer.run()) for informer in self.informers.values()]

        if not self._tasks:
            self._io.call(start())

    def stop(self) -> None:
        """Stops the informers; their stores and resume points are kept."""

        async def stop() -> None:
            for task in self._tasks:
                task.cancel()
            await asyncio.gather(*self._tasks, return_exceptions=True)

        self._io.call(stop())
        self._tasks = []

    def close(self) -> None:
        """Stops everything: informers, the HTTP client, the I/O thread, and (after delivering) the listeners'.
        Closing twice is harmless."""
        if self._io.loop.is_closed():
            return
        self.stop()
        self._io.call(self._transport.aclose())
        self._io.stop()
        self._dispatcher.stop()

    def __enter__(self) -> "KubeCluster":
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def wait_for_sync(self, timeout: float) -> bool:
        """True once every informer has listed its kind (False if that takes longer than ``timeout`` seconds)."""
        deadline = time.monotonic() + timeout
        return all(i.synced.wait(max(0.0, deadline - time.monotonic())) for i in self.informers.values())

    # ------------------------------------------------------------------------------------------- the port: reads

    def list(self, kind: str) -> list[Raw]:
        informer = self.informers.get(kind)
        if informer is not None and informer.synced.is_set():
            return copy_json(informer.objects())
        # A list is read whole (kai explain, kai snapshot: 140,000 pods), never changed in place: its objects share
        # what they have alike, as an informer's, among themselves only.
        decoder = Decoder(api.kind_of(kind), shared=True)
        items, _, _ = self._io.call(list_all(self._transport, decoder, page_size=self._page_size))
        return items

    def get(self, kind: str, key: str) -> Raw | None:
        informer = self.informers.get(kind)
        if informer is not None and informer.synced.is_set():
            obj = informer.lookup(key)
            return copy_json(obj) if obj is not None else None
        try:
            return self._read(kind, api.get_request(api.kind_of(kind), key))
        except NotFound:
            return None

    def subscribe(self, listener: Listener) -> None:
        """Delivers every object of the watched kinds as added, then every change (on the listeners' thread). Returns
        once the objects stored now are delivered, as the in-memory cluster does: a component subscribed and then
        started sees whole caches (a scheduler's first cycle otherwise ran on a state that had none of 14,000 pods
        yet). The replay is a bulk load (``bulk_load``), as an informer's first list: components subscribe as they
        start, and what the listener builds from it lives as long as the process."""
        with bulk_load():
            for name, informer in self.informers.items():
                with informer.lock:
                    self._dispatcher.add(name, listener, list(informer.state.store.values()))
            self._dispatcher.wait_delivered()

    # ------------------------------------------------------------------------------------------- the port: writes

    def create(self, kind: str, obj: Raw, *, idempotent: bool = False) -> Raw:
        """Creates ``obj``; with ``idempotent`` an existing object of that name is returned instead of refused."""
        k = api.kind_of(kind)
        request = api.create_request(k, obj, idempotent=idempotent, field_manager=self.component)
        body = self._io.call(self._send(request))
        if body is not None:
            return self._decoder(kind).object(body)
        return self._read(kind, api.get_request(k, api.object_key(k, obj)))

    def update(self, kind: str, obj: Raw) -> Raw:
        """Replaces ``obj`` if its resourceVersion is current; ``Conflict`` if it changed meanwhile. Pods and nodes
        are views: what the caller changed is patched instead (``patch``), with the same condition."""
        k = api.kind_of(kind)
        if kind in PRUNED_KINDS:
            return self._patch_view(k, obj, status=False)
        return self._read(kind, api.update_request(k, obj, field_manager=self.component))

    def update_status(self, kind: str, obj: Raw) -> Raw:
        """Replaces ``obj``'s status through the status subresource, on the same terms as ``update``."""
        k = api.kind_of(kind)
        if kind in PRUNED_KINDS:
            return self._patch_view(k, obj, status=True)
        return self._read(kind, api.status_update_request(k, obj, field_manager=self.component))

    def delete(self, kind: str, key: str, *, grace_period_s: int | None = None) -> None:
        """Deletes; an object that does not exist counts as deleted. See ``resources.delete_request``."""
        self._io.call(self._send(api.delete_request(api.kind_of(kind), key, grace_period_s=grace_period_s)))

    def patch_merge(self, kind: str, key: str, patch: Raw, *, strategic: bool = False) -> Raw:
        """A JSON merge patch (``strategic``: Kubernetes' strategic merge, built-in kinds only); unconditional."""
        request = api.patch_request(api.kind_of(kind), key, patch, strategic=strategic, field_manager=self.component)
        return self._read(kind, request)

    def patch_status(self, kind: str, key: str, status: Raw, *, strategic: bool = False) -> Raw:
        """Patches ``status`` (the given fields of it) through the status subresource; unconditional."""
        k = api.kind_of(kind)
        request = api.status_patch_request(k, key, status, strategic=strategic, field_manager=self.component)
        return self._read(kind, request)

    def apply(self, kind: str, obj: Raw) -> Raw:
        """Server-side apply of ``obj`` as this component (``resources.apply_request``): idempotent."""
        return self._read(kind, api.apply_request(api.kind_of(kind), obj, field_manager=self.component))

    def bind_pod(
        self, namespace: str, name: str, node: str, uid: str = "", annotations: Mapping[str, str] | None = None
    ) -> None:
        """Binds through pods/binding (only the pod of that ``uid``, when given: the server checks it), adding
        ``annotations`` to the pod in the same write; a pod already bound to ``node`` counts as bound; bound to
        another node, or not of that uid, raises ``Conflict``."""
        try:
            request = api.binding_request(
                namespace, name, node, uid=uid, field_manager=self.component, annotations=annotations
            )
            self.send(request)
        except Conflict:
            pod = self._read("Pod", api.get_request(api.KINDS["Pod"], f"{namespace}/{name}"))
            if (pod.get("spec") or {}).get("nodeName") != node:
                raise

    def evict(self, namespace: str, name: str, *, dry_run: bool = False) -> None:
        """pods/eviction: see ``port.ClusterClient.evict``; a refusal raises ``errors.EvictionRefused``."""
        self.send(api.eviction_request(namespace, name, dry_run=dry_run, field_manager=self.component))

    def create_event(self, kind: str, involved: Raw, reason: str, message: str, *, event_type: str = "Normal") -> None:
        """Records a core/v1 Event about ``involved`` from this component (``kubectl describe`` shows it)."""
        now = self._clock()
        request = api.event_request(
            api.kind_of(kind),
            involved,
            reason=reason,
            message=message,
            event_type=event_type,
            component=self.component,
            now=format_time(now),
            suffix=f"{int(now * 1e9):x}",
        )
        self.send(request)

    def _patch_view(self, kind: api.Kind, obj: Raw, *, status: bool) -> Raw:
        """Writes the caller's changes to a view as a merge patch against the view at the caller's version: the
        cached one if it is that version, else the server's (the cache may lag the caller's last write)."""
        key = api.object_key(kind, obj)
        version = (obj.get("metadata") or {}).get("resourceVersion")
        informer = self.informers.get(kind.name)
        base = informer.lookup(key) if informer is not None and informer.synced.is_set() else None
        if base is None or (version and (base.get("metadata") or {}).get("resourceVersion") != version):
            base = self._read(kind.name, api.get_request(kind, key))
        current = (base.get("metadata") or {}).get("resourceVersion")
        if version and current != version:
            raise Conflict(
                409,
                "Conflict",
                f"the object has been modified (resourceVersion {version} is now {current}); "
                "please apply your changes to the latest version and try again",
                what=f"update {kind.name} {key}",
            )
        patch = view_patch(base, obj, status=status)
        if not patch:
            return copy_json(base)
        request = api.patch_request(
            kind, key, patch, subresource="status" if status else "", field_manager=self.component
        )
        return self._read(kind.name, request)

    # ------------------------------------------------------------------------------------------- any request

    def send(self, request: api.Request) -> Raw | None:
        """Sends one request; the decoded answer, or None when it was refused in a way ``request.accept`` allows."""
        body = self._io.call(self._send(request))
        return decode_any(body) if body else None

    def send_all(self, requests: Iterable[api.Request]) -> builtins.list[Raw | ApiError | None]:
        """Sends a batch concurrently (bounded by ``max_in_flight``); per request its answer, None or its error."""

        async def one(request: api.Request) -> Raw | ApiError | None:
            try:
                async with self._in_flight:
                    body = await self._send(request)
            except ApiError as e:
                return e
            return decode_any(body) if body else None

        async def batch() -> builtins.list[Raw | ApiError | None]:
            return list(await asyncio.gather(*(one(r) for r in requests)))

        return self._io.call(batch())

    async def _send(self, request: api.Request) -> bytes | None:
        try:
            return await self._transport.send(request, self._lane)
        except ApiError as e:
            if e.reason in request.accept:
                return None
            raise

    def _read(self, kind: str, request: api.Request) -> Raw:
        """A request that accepts no refusal, decoded as ``kind`` (pods and nodes as the informers' views)."""
        return self._decoder(kind).object(self._io.call(self._transport.send(request, self._lane)))
