"""The builtin usage store's history kept in a ConfigMap, so a restarted scheduler (a rollout, a new leader) goes on
with the usage it had instead of starting from nothing.

The ConfigMap (``<scheduler namespace>/<scheduler name>-usage`` unless ``usageDBConfig.connectionString`` names one)
holds a small JSON header in ``data`` and the buckets as zlib-compressed little-endian arrays in ``binaryData``
(capacity and usage as float32: a share needs no more). It is written at most once per ``fetchInterval``. A history
that cannot be read is reported in the log and the scheduler starts with none; one that would not fit a ConfigMap
is not written (and said so once).
"""

import base64
import json
import logging
import zlib
from typing import Any

import numpy as np

from kai.cluster.port import ClusterClient, Raw
from kai.core.framework.usage.usage_store import AllocationSample, UsageHistory

log = logging.getLogger(__name__)
FORMAT = "kai usage history v1"
HEADER_KEY = "history.json"
BUCKETS_KEY = "buckets"
MAX_BYTES = 900_000
"""Below the API server's 1 MiB limit for an object, with room for its metadata."""


class HistoryError(ValueError):
    pass


def encode(history: UsageHistory) -> tuple[dict[str, str], dict[str, str]]:
    """The ConfigMap's ``data`` and ``binaryData`` for ``history``."""
    held = history.held
    header = {
        "format": FORMAT,
        "bucketSeconds": history.bucket_s,
        "queues": list(history.queues),
        "buckets": len(history.ids),
        "heldAt": history.held_at,
        "held": None
        if held is None
        else {"capacity": list(held.capacity), "queues": {q: list(v) for q, v in held.queues.items()}},
    }
    payload = b"".join(
        (
            history.ids.astype("<i8").tobytes(),
            history.first.astype("<f8").tobytes(),
            history.last.astype("<f8").tobytes(),
            history.amounts.astype("<f4").tobytes(),
        )
    )
    binary = base64.b64encode(zlib.compress(payload, 6)).decode("ascii")
    return {HEADER_KEY: json.dumps(header, separators=(",", ":"))}, {BUCKETS_KEY: binary}


def decode(configmap: Raw) -> UsageHistory:
    """The history a ConfigMap written by ``encode`` holds; ``HistoryError`` says what is wrong with it."""
    try:
        header = json.loads((configmap.get("data") or {})[HEADER_KEY])
        if header.get("format") != FORMAT:
            raise HistoryError(f"data.{HEADER_KEY}: format {header.get('format')!r}, expected {FORMAT!r}")
        queues = tuple(str(q) for q in header["queues"])
        count = int(header["buckets"])
        raw = zlib.decompress(base64.b64decode((configmap.get("binaryData") or {})[BUCKETS_KEY]))
        columns = len(queues) + 1
        sizes = (count * 8, count * 8, count * 8, count * columns * 3 * 4)
        if len(raw) != sum(sizes):
            raise HistoryError(f"binaryData.{BUCKETS_KEY}: {len(raw)} bytes, expected {sum(sizes)}")
        offsets = np.cumsum((0, *sizes))
        ids = np.frombuffer(raw[offsets[0] : offsets[1]], "<i8").astype(np.int64)
        first = np.frombuffer(raw[offsets[1] : offsets[2]], "<f8").astype(np.float64)
        last = np.frombuffer(raw[offsets[2] : offsets[3]], "<f8").astype(np.float64)
        amounts = np.frombuffer(raw[offsets[3] : offsets[4]], "<f4").astype(np.float64).reshape(count, columns, 3)
        held = _held(header.get("held"))
        held_at = header.get("heldAt")
        return UsageHistory(
            float(header["bucketSeconds"]),
            queues,
            ids,
            first,
            last,
            amounts,
            held,
            None if held_at is None else float(held_at),
        )
    except HistoryError:
        raise
    except (AttributeError, KeyError, TypeError, ValueError, zlib.error) as error:
        raise HistoryError(f"unreadable ({type(error).__name__}: {error})") from None


def _held(raw: Any) -> AllocationSample | None:
    if raw is None:
        return None
    capacity = tuple(float(v) for v in raw["capacity"])
    queues = {str(q): tuple(float(v) for v in values) for q, values in raw["queues"].items()}
    if len(capacity) != 3 or any(len(v) != 3 for v in queues.values()):
        raise HistoryError(f"data.{HEADER_KEY}: held: expected (cpu, memory, gpu) triples")
    return AllocationSample((capacity[0], capacity[1], capacity[2]), {q: (v[0], v[1], v[2]) for q, v in queues.items()})


class ConfigMapHistory:
    """Loads and saves the history in one ConfigMap through the cluster port."""

    def __init__(self, cluster: ClusterClient, namespace: str, name: str) -> None:
        self.cluster = cluster
        self.key = f"{namespace}/{name}"
        self.namespace, self.name = namespace, name
        self._failing = False

    def load(self) -> UsageHistory | None:
        try:
            configmap = self.cluster.get("ConfigMap", self.key)
        except Exception as error:  # an unreachable API server must not stop the scheduler from starting
            log.warning("usage history: cannot read ConfigMap %s (%s); starting with none", self.key, error)
            return None
        if configmap is None:
            return None
        try:
            return decode(configmap)
        except HistoryError as error:
            log.warning("usage history in ConfigMap %s: %s; starting with none", self.key, error)
            return None

    def save(self, history: UsageHistory) -> None:
        data, binary = encode(history)
        size = sum(len(v) for v in data.values()) + sum(len(v) for v in binary.values())
        if size > MAX_BYTES:
            self._report(f"{size} bytes would not fit a ConfigMap ({len(history.queues)} queues); not written")
            return
        try:
            current = self.cluster.get("ConfigMap", self.key)
            if current is None:
                meta = {"name": self.name, "namespace": self.namespace, "labels": {"app": "kai-scheduler"}}
                body = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta}
                self.cluster.create("ConfigMap", {**body, "data": data, "binaryData": binary})
            else:
                self.cluster.update("ConfigMap", {**current, "data": data, "binaryData": binary})
        except Exception as error:  # kept in memory all the same; the next save tries again
            self._report(f"cannot write ({error})")
            return
        if self._failing:
            log.info("usage history: ConfigMap %s written again", self.key)
        self._failing = False

    def _report(self, problem: str) -> None:
        if not self._failing:
            log.warning("usage history: ConfigMap %s: %s", self.key, problem)
        self._failing = True
