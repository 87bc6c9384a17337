"""kai's informer: one kind's objects kept in a local store by LIST, then WATCH, for as long as it runs.

The loop is client-go's reflector, small enough to read in one go:

1. LIST in pages (``limit``/``continue``); the list's resourceVersion is where the watch starts. The first LIST is
   served from the API server's watch cache (``resourceVersion=0``, as client-go's reflector's), a re-list is a
   consistent read: it must not go back behind what the store has seen.
2. WATCH from it with bookmarks; every event — bookmarks too — advances the resourceVersion kept in ``state``.
3. When the server ends the watch (its ``timeoutSeconds``) or the connection drops, WATCH again from that version:
   nothing is lost and nothing is repeated.
4. When the server says the version is too old (HTTP 410, or an ERROR event with code 410), LIST again and emit the
   difference with the store (``replace_changes``): objects that disappeared meanwhile become deletions carrying
   their last known state, so consumers converge to the server without ever seeing the gap.

Other failures back off exponentially (the server's retry-after first), and so does a watch that ends at once
without an event, so that a misbehaving server or proxy is not hammered. Changes go to ``sink`` as the port's
``(kind, obj, deleted)`` while ``lock`` is held, so a reader of the store and the stream of changes always agree.
The state outlives ``run``: a stopped informer started again resumes its watch where it stopped.

An informer's first list is a bulk load (``bulk_load``, docs/architecture.md §7): the cyclic GC does not walk it while
it grows, and it is frozen out of the GC once listed. That list is most of what a process holds (140,000 pods: some
400 MB), JSON has no reference cycles (a replaced object is freed by its reference count all the same), and every full
collection would walk it again. Later lists are not: the process's other garbage may be waiting for a collection.
"""

import asyncio
import logging
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

import msgspec

from kai.cluster.kube.bulk_load import bulk_load
from kai.cluster.kube.decode import Decoder, decompressed
from kai.cluster.kube.errors import ApiError, Gone, NotFound, api_error
from kai.cluster.kube.resources import Kind, list_request, object_key, watch_request
from kai.cluster.kube.transport import Transport
from kai.cluster.port import Raw

log = logging.getLogger(__name__)

Change = tuple[Raw, bool]
SHORT_WATCH_S = 1.0
Sink = Callable[[str, Raw, bool], None]


@dataclass
class InformerState:
    """The store (objects by key) and the resourceVersion to resume from ("" = must LIST first)."""

    store: dict[str, Raw] = field(default_factory=dict)
    resource_version: str = ""


@dataclass
class InformerStats:
    """Counters that tell how the informer got its data (and what tests assert about resumption)."""

    lists: int = 0
    pages: int = 0
    watches: int = 0
    expired: int = 0
    errors: int = 0
    events: int = 0


def _resource_version(obj: Mapping[str, object]) -> str:
    meta = obj.get("metadata")
    return str(meta.get("resourceVersion") or "") if isinstance(meta, Mapping) else ""


def replace_changes(store: Mapping[str, Raw], fresh: Mapping[str, Raw]) -> list[Change]:
    """What a re-list means to consumers: deletions (last known state) for keys gone, then every object that is new
    or whose resourceVersion changed. Unchanged objects are not repeated."""
    changes: list[Change] = [(obj, True) for key, obj in store.items() if key not in fresh]
    for key, obj in fresh.items():
        old = store.get(key)
        if old is None or _resource_version(old) != _resource_version(obj):
            changes.append((obj, False))
    return changes


def apply_event(kind: Kind, state: InformerState, event_type: str, obj: Raw) -> Change | None:
    """Applies one WATCH event to ``state``; returns the change to emit (None for a bookmark). An ERROR event raises
    the error it carries (``Gone`` for 410)."""
    if event_type == "ERROR":
        raise api_error(int(obj.get("code") or 500), obj, what=f"watch {kind.name}")
    version = _resource_version(obj)
    if version:
        state.resource_version = version
    if event_type == "BOOKMARK":
        return None
    key = object_key(kind, obj)
    if event_type == "DELETED":
        state.store.pop(key, None)
        return obj, True
    if event_type not in ("ADDED", "MODIFIED"):
        raise ApiError(500, "UnknownWatchEvent", f"unknown watch event type {event_type!r}", what=f"watch {kind.name}")
    state.store[key] = obj
    return obj, False


async def list_all(
    transport: Transport, decoder: Decoder, *, page_size: int, from_cache: bool = False
) -> tuple[list[Raw], str, int]:
    """Every object of the decoder's kind, page by page, the list's resourceVersion and how many pages it took;
    ``from_cache``: as the API server's watch cache has them (``resources.list_request``)."""
    items: list[Raw] = []
    token, pages = "", 0
    while True:
        request = list_request(decoder.kind, limit=page_size, continue_token=token, from_cache=from_cache)
        if from_cache and not token:  # the cache's answer comes in one piece: decompressed and decoded by parts
            stream = decoder.list_stream()
            for part in decompressed(*await transport.send_compressed(request)):
                stream.feed(part)
            page, version, token = stream.end()
        else:
            page, version, token = decoder.page(await transport.send(request))
        pages += 1
        items += page
        if not token:
            return items, version, pages


class Informer:
    """Keeps ``state`` in step with one kind on the server while ``run`` runs (a task on an asyncio loop)."""

    def __init__(
        self,
        kind: Kind,
        transport: Transport,
        sink: Sink,
        *,
        state: InformerState | None = None,
        page_size: int = 500,
        watch_timeout_s: int = 300,
        first_backoff_s: float = 0.1,
        max_backoff_s: float = 10.0,
    ) -> None:
        self.kind = kind
        self.state = state or InformerState()
        self.stats = InformerStats()
        self.lock = threading.Lock()
        self.synced = threading.Event()
        self._transport = transport
        self._decoder = Decoder(kind, shared=True)
        self._sink = sink
        self._page_size = page_size
        self._watch_timeout_s = watch_timeout_s
        self._first_backoff_s = first_backoff_s
        self._max_backoff_s = max_backoff_s

    def objects(self) -> list[Raw]:
        with self.lock:
            return list(self.state.store.values())

    def lookup(self, key: str) -> Raw | None:
        with self.lock:
            return self.state.store.get(key)

    async def run(self) -> None:
        """LIST/WATCH until cancelled. If ``state`` already has a resourceVersion, starts with the WATCH."""
        backoff = self._first_backoff_s
        while True:
            try:
                if not self.state.resource_version:
                    await self._relist()
                else:
                    self.synced.set()
                await self._watch()
                backoff = self._first_backoff_s
            except Gone as e:
                self.stats.expired += 1
                log.info("%s: %s; re-listing", self.kind.name, e)
                self.state.resource_version = ""
            except NotFound as e:
                if not self.kind.optional:
                    backoff = await self._retry(e, backoff)
                    continue
                if not self.synced.is_set():  # its API is not served: no objects, and a look again now and then
                    log.info("%s: %s; the API is not served, taken as no objects", self.kind.name, e)
                    self.synced.set()
                await self._back_off(self._max_backoff_s, backoff)
            except ApiError as e:
                backoff = await self._retry(e, backoff)
            except Exception:  # never die silently: a dead informer would leave a cache that looks fine
                log.exception("%s informer failed; retrying in %.2fs", self.kind.name, backoff)
                backoff = await self._back_off(backoff, backoff)

    async def _retry(self, error: ApiError, backoff: float) -> float:
        delay = error.retry_after_s if error.retry_after_s is not None else backoff
        log.warning("%s informer: %s; retrying in %.2fs", self.kind.name, error, delay)
        return await self._back_off(delay, backoff)

    async def _back_off(self, delay: float, backoff: float) -> float:
        """Waits ``delay``; returns the next backoff (doubled, capped)."""
        self.stats.errors += 1
        await asyncio.sleep(delay)
        return min(backoff * 2, self._max_backoff_s)

    async def _relist(self) -> None:
        if self.synced.is_set():
            await self._list(from_cache=False)
            return
        with bulk_load():  # see the module docstring
            await self._list(from_cache=True)

    async def _list(self, *, from_cache: bool) -> None:
        items, version, pages = await list_all(
            self._transport, self._decoder, page_size=self._page_size, from_cache=from_cache
        )
        fresh = {object_key(self.kind, obj): obj for obj in items}
        self.stats.lists += 1
        self.stats.pages += pages
        with self.lock:
            changes = replace_changes(self.state.store, fresh)
            self.state.store = fresh
            self.state.resource_version = version
            self._emit(changes)
        self.synced.set()

    async def _watch(self) -> None:
        """One WATCH request, until the server ends it; each event is applied and emitted as it arrives. A watch
        closed at once with nothing in it is an error (client-go's "very short watch"), so it is retried with
        backoff rather than at once, again and again."""
        request = watch_request(self.kind, self.state.resource_version, timeout_s=self._watch_timeout_s)
        self.stats.watches += 1
        loop = asyncio.get_running_loop()
        started, received = loop.time(), 0
        async with self._transport.stream_lines(request, read_timeout_s=self._watch_timeout_s + 30) as lines:
            async for line in lines:
                received += 1
                try:
                    event_type, obj = self._decoder.watch_line(line)
                except msgspec.DecodeError as e:  # one undecodable object must not stop the kind
                    self.stats.errors += 1
                    log.error("%s watch: skipping an undecodable event: %s", self.kind.name, e)
                    continue
                with self.lock:
                    change = apply_event(self.kind, self.state, event_type, obj)
                    if change is not None:
                        self._emit([change])
        if not received and loop.time() - started < SHORT_WATCH_S:
            raise ApiError(0, "ShortWatch", "the watch closed at once without an event", what=f"watch {self.kind.name}")

    def _emit(self, changes: list[Change]) -> None:
        self.stats.events += len(changes)
        for obj, deleted in changes:
            self._sink(self.kind.name, obj, deleted)
