"""Kubernetes Events from kai's components, recorded as client-go's recorder does (``tools/record``), so that
``kubectl describe`` lists them and a problem repeated every cycle is one Event whose count grows.

Every event names its object with apiVersion, kind, namespace, name and uid: ``kubectl describe`` finds an object's
events by a field selector on those (the uid included), and a pod re-created under the same name starts afresh.
The object's resourceVersion is left out: it is no part of an event's identity.

What client-go's ``EventCorrelator`` does, kept here:
- **Repeats** (same source, object, type, reason and message) update the existing Event's ``count`` and
  ``lastTimestamp`` instead of creating another.
- **Similar events** (same source, object, type and reason, another message): from the 10th distinct message within
  10 minutes they go to one Event whose message is ``(combined from similar events): <latest message>``.
- **Spam**: writes about one object (per source and type) draw on a token bucket of 25, refilled one every 5 minutes.
- **Bounded memory**: each of the three is an LRU of 4,096 keys; an evicted key just starts a new Event.

One difference, for the API server's sake: client-go writes every repeat (until the spam bucket runs dry), while
components here repeat the same event every cycle; so the count of a repeat is written at most once per
``refresh_s`` (and by ``flush``, which components call after each pass). docs/deviations.md has it.

With ``writes`` (a component's ``Writes``), events are written in the background, as client-go's broadcaster does,
so a pass never waits for them; at most ``MAX_QUEUED`` wait to be written, and the ones beyond are dropped (client-go
drops them when its queue of 1,000 is full; kai's events yield to binds in a burst, so its queue is longer).
"""

import logging
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from cachetools import LRUCache

from kai.cluster.port import ClusterClient, Raw
from kai.components.shared.parallel import Writes
from kai.core.model.meta import format_time

log = logging.getLogger(__name__)

API_VERSIONS = {
    "Pod": "v1",
    "Node": "v1",
    "Queue": "scheduling.run.ai/v2",
    "PodGroup": "scheduling.run.ai/v2alpha2",
    "BindRequest": "scheduling.run.ai/v1alpha2",
}
"""apiVersion of the kinds kai reports on, for objects that come without one."""

CACHE_SIZE = 4096
SIMILAR_MAX = 10
SIMILAR_WINDOW_S = 600.0
SPAM_BURST = 25
SPAM_REFILL_S = 300.0
REFRESH_S = 60.0
COMBINED_PREFIX = "(combined from similar events): "
MAX_QUEUED = 10_000
"""Events waiting to be written at most (client-go's ``maxQueuedEvents`` is 1,000): events yield to binds in a burst
(``ratelimit.BACKGROUND_SHARE``), and a burst of 5,000 pods queues two each; about 1 KB apiece."""


@dataclass(frozen=True, slots=True)
class ObjectRef:
    """The involved object of an event: what ``kubectl describe`` matches on."""

    api_version: str
    kind: str
    namespace: str
    name: str
    uid: str

    @classmethod
    def of(cls, kind: str, obj: Mapping[str, Any]) -> "ObjectRef":
        meta = obj.get("metadata") or {}
        return cls(
            str(obj.get("apiVersion") or API_VERSIONS.get(kind, "v1")),
            kind,
            str(meta.get("namespace") or ""),
            str(meta.get("name") or ""),
            str(meta.get("uid") or ""),
        )

    def as_dict(self) -> Raw:
        ref: Raw = {"apiVersion": self.api_version, "kind": self.kind, "name": self.name}
        if self.namespace:
            ref["namespace"] = self.namespace
        if self.uid:
            ref["uid"] = self.uid
        return ref


@dataclass(slots=True)
class _Logged:
    """One Event: its object, its body as first written, its count and message now, and when it was written."""

    ref: ObjectRef
    event: Raw
    written_at: float
    count: int = 1
    last: float = 0.0
    message: str = ""


@dataclass(slots=True)
class _Similar:
    messages: set[str] = field(default_factory=set)
    last: float = 0.0


@dataclass(slots=True)
class _Bucket:
    tokens: float
    at: float


class EventRecorder:
    """Records Events about objects for one component (``source.component``); thread-safe."""

    def __init__(
        self,
        cluster: ClusterClient,
        component: str,
        clock: Callable[[], float] = time.time,
        *,
        cache_size: int = CACHE_SIZE,
        refresh_s: float = REFRESH_S,
        writes: Writes | None = None,
    ) -> None:
        """``writes``: write events in its background pool (default: at once, on the caller's thread)."""
        self.cluster = cluster
        self.writes = writes
        self._queued = 0
        """Events handed to ``writes`` and not written yet."""
        self.component = component
        self.clock = clock
        self.refresh_s = refresh_s
        self._lock = threading.Lock()
        self._logged: LRUCache[tuple[str, ...], _Logged] = LRUCache(cache_size)
        self._similar: LRUCache[tuple[str, ...], _Similar] = LRUCache(cache_size)
        self._spam: LRUCache[tuple[str, ...], _Bucket] = LRUCache(cache_size)
        self._dirty: dict[tuple[str, ...], _Logged] = {}
        """Events whose latest count is not written yet (dropped at the next ``flush`` once evicted)."""

    def record(
        self,
        ref: ObjectRef,
        event_type: str,
        reason: str,
        message: str,
        annotations: Mapping[str, str] | None = None,
        related: Raw | None = None,
    ) -> None:
        """An event about ``ref``: a new Event, or a repeat counted on the one already written. ``related``: the
        object reference (with ``fieldPath``) the message is about, when that is not ``ref`` as a whole."""
        now = self.clock()
        with self._lock:
            key, message = self._aggregate(ref, event_type, reason, message, now)
            logged = self._logged.get(key)
            if logged is not None:
                logged.count += 1
                logged.last = now
                logged.message = message
                self._dirty[key] = logged
                if now - logged.written_at < self.refresh_s or not self._take_token(ref, event_type, now):
                    return
                write, body = self.cluster.update, self._written(key, logged, now)
            else:
                if not self._take_token(ref, event_type, now):
                    return
                event = self._new_event(ref, event_type, reason, message, annotations, now)
                if related:
                    event["related"] = dict(related)
                logged = _Logged(ref, event, now, last=now, message=message)
                self._logged[key] = logged
                write, body = self.cluster.create, dict(event)
        self._send(key, write, body)

    def flush(self) -> None:
        """Writes the counts of repeats not written yet, once ``refresh_s`` has passed since their last write."""
        now = self.clock()
        bodies = []
        with self._lock:
            for key, logged in list(self._dirty.items()):
                if key not in self._logged:  # evicted (a membership test does not touch the LRU order)
                    del self._dirty[key]
                elif now - logged.written_at >= self.refresh_s and self._take_token(
                    logged.ref, logged.event["type"], now
                ):
                    bodies.append((key, self._written(key, logged, now)))
        for key, body in bodies:
            self._send(key, self.cluster.update, body)

    def _written(self, key: tuple[str, ...], logged: _Logged, now: float) -> Raw:
        """Marks ``logged`` as written now; the body to write (timestamps are formatted only here)."""
        logged.written_at = now
        self._dirty.pop(key, None)
        return {
            **logged.event,
            "count": logged.count,
            "lastTimestamp": format_time(logged.last),
            "message": logged.message,
        }

    def _send(self, key: tuple[str, ...], write: Callable[[str, Raw], Raw], body: Raw) -> None:
        """One write, now or in the background (dropped when too many wait, as client-go does)."""
        if self.writes is None:
            self._write(key, write, body)
            return
        with self._lock:
            full = self._queued >= MAX_QUEUED
            if not full:
                self._queued += 1
        if full:
            log.warning(
                "event %s about %s dropped: %d events wait to be written",
                body["reason"],
                body["involvedObject"]["name"],
                MAX_QUEUED,
            )
            with self._lock:
                self._logged.pop(key, None)
                self._dirty.pop(key, None)
        else:
            self.writes.later("event", body, lambda b: self._write_queued(key, write, b))

    def _write_queued(self, key: tuple[str, ...], write: Callable[[str, Raw], Raw], body: Raw) -> None:
        try:
            self._write(key, write, body)
        finally:
            with self._lock:
                self._queued -= 1

    def _write(self, key: tuple[str, ...], write: Callable[[str, Raw], Raw], body: Raw) -> None:
        """One write; when it fails the key is forgotten, so the next occurrence starts a new Event."""
        try:
            write("Event", body)
        except Exception as error:  # an event is best effort: it never fails the write it reports on
            log.warning("event %s about %s not recorded: %s", body["reason"], body["involvedObject"]["name"], error)
            with self._lock:
                self._logged.pop(key, None)
                self._dirty.pop(key, None)

    def _aggregate(
        self, ref: ObjectRef, event_type: str, reason: str, message: str, now: float
    ) -> tuple[tuple[str, ...], str]:
        """The key of the Event this one goes to, and its message (client-go's ``EventAggregate``)."""
        similar_key = (self.component, *_identity(ref), event_type, reason)
        similar = self._similar.get(similar_key)
        if similar is None or now - similar.last > SIMILAR_WINDOW_S:
            similar = self._similar[similar_key] = _Similar()
        similar.messages.add(message)
        similar.last = now
        if len(similar.messages) < SIMILAR_MAX:
            return (*similar_key, message), message
        similar.messages.pop()  # like client-go: the set never grows past the threshold
        return similar_key, COMBINED_PREFIX + message

    def _take_token(self, ref: ObjectRef, event_type: str, now: float) -> bool:
        """client-go's per-object spam filter: a burst of 25 writes, then one per 5 minutes."""
        spam_key = (self.component, *_identity(ref), event_type)
        bucket = self._spam.get(spam_key) or _Bucket(SPAM_BURST, now)
        bucket.tokens = min(SPAM_BURST, bucket.tokens + (now - bucket.at) / SPAM_REFILL_S)
        bucket.at = now
        self._spam[spam_key] = bucket
        if bucket.tokens < 1:
            return False
        bucket.tokens -= 1
        return True

    def _new_event(
        self,
        ref: ObjectRef,
        event_type: str,
        reason: str,
        message: str,
        annotations: Mapping[str, str] | None,
        now: float,
    ) -> Raw:
        meta: Raw = {"name": f"{ref.name}.{_stamps.next(now):x}", "namespace": ref.namespace or "default"}
        if annotations:
            meta["annotations"] = dict(annotations)
        stamp = format_time(now)
        return {
            "apiVersion": "v1",
            "kind": "Event",
            "metadata": meta,
            "involvedObject": ref.as_dict(),
            "reason": reason,
            "message": message,
            "type": event_type,
            "count": 1,
            "firstTimestamp": stamp,
            "lastTimestamp": stamp,
            "source": {"component": self.component},
            "reportingComponent": self.component,
        }


class _Stamps:
    """client-go names an event ``<object>.<unix nanoseconds in hex>``; these stay unique in the process even when
    several recorders read the same clock value."""

    def __init__(self) -> None:
        self._last = 0
        self._lock = threading.Lock()

    def next(self, now: float) -> int:
        with self._lock:
            self._last = max(int(now * 1e9), self._last + 1)
            return self._last


_stamps = _Stamps()


def _identity(ref: ObjectRef) -> tuple[str, str, str, str, str]:
    return (ref.api_version, ref.kind, ref.namespace, ref.name, ref.uid)
