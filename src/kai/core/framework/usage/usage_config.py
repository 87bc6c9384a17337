"""KAI's ``usageDBConfig``: where time-based fair share gets each queue's historical usage, and how it is weighed.

The names, defaults and checks are KAI v0.17's (``pkg/scheduler/cache/usagedb``): half-life decay off unless
``halfLifePeriod`` > 0, a 1w sliding window, usage fetched every 1m and stale after 5m (never less than the fetch
interval). kai adds a client of its own, ``builtin``: the scheduler keeps the history from what it allocated, so no
Prometheus is needed (docs/deviations.md). A bad value raises ``InvalidObject`` naming the field and what is allowed;
what KAI silently ignores (an unknown key, an unreadable extra parameter) is a warning.
"""

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from enum import StrEnum

from cronsim import CronSim, CronSimError

from kai.core.model.duration import parse_duration, parse_prometheus_duration
from kai.core.model.errors import InvalidObject
from kai.core.model.meta import parse_time

WHERE = "scheduler config"
KEY = "usageDBConfig"
CLIENT_BUILTIN = "builtin"
CLIENT_PROMETHEUS = "prometheus"
CLIENT_TYPES = (CLIENT_BUILTIN, CLIENT_PROMETHEUS)
RESOURCES = ("cpu", "memory", "gpu")
"""KAI's resource order for quantities (cpu millicores, memory bytes, GPUs)."""
DEFAULT_ALLOCATION_METRICS = {
    "gpu": "kai_queue_allocated_gpus",
    "cpu": "kai_queue_allocated_cpu_cores",
    "memory": "kai_queue_allocated_memory_bytes",
}
DEFAULT_CAPACITY_METRICS = {
    "gpu": 'sum(kube_node_status_capacity{resource="nvidia_com_gpu"})',
    "cpu": 'sum(kube_node_status_capacity{resource="cpu"})',
    "memory": 'sum(kube_node_status_capacity{resource="memory"})',
}
_ANY_TIME = datetime(2025, 1, 1, tzinfo=UTC)
"""Where a cron expression is checked from (its validity does not depend on it; the core reads no clock)."""
_DURATIONS = ("usageQueryTimeout", "queryResolution")
_METRICS = {f"{r}AllocationMetric" for r in RESOURCES} | {f"{r}CapacityMetric" for r in RESOURCES}
_PARAMS = (
    "halfLifePeriod",
    "windowSize",
    "windowType",
    "tumblingWindowStartTime",
    "cronString",
    "fetchInterval",
    "stalenessPeriod",
    "waitTimeout",
    "extraParams",
)


class WindowType(StrEnum):
    SLIDING = "sliding"
    """The usage of the last ``windowSize`` before now."""
    TUMBLING = "tumbling"
    """Back-to-back windows of ``windowSize`` from ``tumblingWindowStartTime``: usage since the last boundary."""
    CRON = "cron"
    """Windows that restart at every time ``cronString`` names: usage since the last of them."""


@dataclass(frozen=True, slots=True)
class UsageParams:
    """``usageParams`` with KAI's defaults applied; durations in seconds, times as POSIX seconds."""

    half_life_s: float | None = None
    window_s: float = 604800.0
    window_text: str = "1w"
    """``windowSize`` as written: KAI puts it verbatim into its Prometheus query."""
    window_type: WindowType = WindowType.SLIDING
    tumbling_start: float | None = None
    cron: str = ""
    fetch_interval_s: float = 60.0
    staleness_s: float = 300.0
    wait_timeout_s: float = 60.0
    query_timeout_s: float = 10.0
    query_resolution_s: float = 60.0
    allocation_metrics: Mapping[str, str] = field(default_factory=lambda: dict(DEFAULT_ALLOCATION_METRICS))
    capacity_metrics: Mapping[str, str] = field(default_factory=lambda: dict(DEFAULT_CAPACITY_METRICS))


@dataclass(frozen=True, slots=True)
class UsageDBConfig:
    client_type: str
    connection_string: str = ""
    """``prometheus``: the server's URL. ``builtin``: the ConfigMap (namespace/name) that keeps the history."""
    connection_string_env_var: str = ""
    params: UsageParams = field(default_factory=UsageParams)


def parse_usage_db_config(raw: object) -> tuple[UsageDBConfig | None, tuple[InvalidObject, ...]]:
    """``usageDBConfig`` (absent: time-based fair share is off) and the warnings about it."""
    if raw is None:
        return None, ()
    if not isinstance(raw, Mapping):
        raise InvalidObject(WHERE, KEY, "expected a mapping with clientType, connectionString and usageParams")
    client = raw.get("clientType")
    if not isinstance(client, str) or client not in CLIENT_TYPES:
        got = "missing" if not client else f"got {client!r}"
        raise InvalidObject(WHERE, f"{KEY}.clientType", f"{got}; allowed: {', '.join(CLIENT_TYPES)}")
    connection = _string(raw, "connectionString")
    env_var = _string(raw, "connectionStringEnvVar")
    if connection and env_var:
        raise InvalidObject(
            WHERE, f"{KEY}.connectionString", "set together with connectionStringEnvVar; only one is allowed"
        )
    if client == CLIENT_PROMETHEUS and not (connection or env_var):
        raise InvalidObject(
            WHERE,
            f"{KEY}.connectionString",
            "clientType prometheus needs the server's URL here or in connectionStringEnvVar",
        )
    if client == CLIENT_BUILTIN and env_var:
        raise InvalidObject(
            WHERE,
            f"{KEY}.connectionStringEnvVar",
            "not used by clientType builtin (connectionString names its ConfigMap)",
        )
    if client == CLIENT_BUILTIN and connection and connection.count("/") != 1:
        raise InvalidObject(
            WHERE,
            f"{KEY}.connectionString",
            f"got {connection!r}; clientType builtin expects a ConfigMap as namespace/name",
        )
    params, warnings = _params(raw.get("usageParams"))
    unknown = sorted(set(raw) - {"clientType", "connectionString", "connectionStringEnvVar", "usageParams"})
    warnings += tuple(InvalidObject(WHERE, f"{KEY}.{key}", "unknown key; ignored") for key in unknown)
    return UsageDBConfig(client, connection, env_var, params), warnings


def _string(raw: Mapping[str, object], key: str) -> str:
    value = raw.get(key) or ""
    if not isinstance(value, str):
        raise InvalidObject(WHERE, f"{KEY}.{key}", f"got {value!r}; expected a string")
    return value


def _params(raw: object) -> tuple[UsageParams, tuple[InvalidObject, ...]]:
    where = f"{KEY}.usageParams"
    if raw is None:
        return UsageParams(), ()
    if not isinstance(raw, Mapping):
        raise InvalidObject(WHERE, where, f"expected a mapping with {', '.join(_PARAMS)}")
    defaults = UsageParams()
    warnings = [
        InvalidObject(WHERE, f"{where}.{key}", "unknown key; ignored") for key in sorted(set(raw) - set(_PARAMS))
    ]

    def duration(key: str, default: float) -> float:
        value = raw.get(key)
        return default if value is None else parse_duration(str(value), WHERE, f"{where}.{key}")

    half_life = duration("halfLifePeriod", 0.0)
    window_text = str(raw.get("windowSize") or defaults.window_text)
    window = parse_prometheus_duration(window_text, WHERE, f"{where}.windowSize")
    if window <= 0:
        raise InvalidObject(WHERE, f"{where}.windowSize", f"got {window_text!r}; must be longer than 0")
    window_type = _window_type(raw.get("windowType"), where)
    tumbling_start = None
    if raw.get("tumblingWindowStartTime") is not None:
        tumbling_start = parse_time(raw["tumblingWindowStartTime"], WHERE, f"{where}.tumblingWindowStartTime")
    if window_type is WindowType.TUMBLING and tumbling_start is None:
        raise InvalidObject(
            WHERE, f"{where}.tumblingWindowStartTime", "windowType tumbling needs the time its first window starts"
        )
    cron = str(raw.get("cronString") or "")
    if window_type is WindowType.CRON:
        _check_cron(cron, f"{where}.cronString")
    fetch = duration("fetchInterval", defaults.fetch_interval_s)
    if fetch <= 0:
        raise InvalidObject(WHERE, f"{where}.fetchInterval", f"got {raw.get('fetchInterval')!r}; must be longer than 0")
    staleness = duration("stalenessPeriod", defaults.staleness_s)
    if staleness < fetch:
        warnings.append(
            InvalidObject(WHERE, f"{where}.stalenessPeriod", "shorter than fetchInterval; fetchInterval is used")
        )
        staleness = fetch
    durations, metrics, extra_warnings = _extras(raw.get("extraParams"), f"{where}.extraParams")
    return (
        UsageParams(
            half_life_s=half_life if half_life > 0 else None,
            window_s=window,
            window_text=window_text,
            window_type=window_type,
            tumbling_start=tumbling_start,
            cron=cron,
            fetch_interval_s=fetch,
            staleness_s=staleness,
            wait_timeout_s=duration("waitTimeout", defaults.wait_timeout_s),
            query_timeout_s=durations.get("usageQueryTimeout", defaults.query_timeout_s),
            query_resolution_s=durations.get("queryResolution", defaults.query_resolution_s),
            allocation_metrics={
                r: metrics.get(f"{r}AllocationMetric", m) for r, m in DEFAULT_ALLOCATION_METRICS.items()
            },
            capacity_metrics={r: metrics.get(f"{r}CapacityMetric", m) for r, m in DEFAULT_CAPACITY_METRICS.items()},
        ),
        (*warnings, *extra_warnings),
    )


def _window_type(value: object, where: str) -> WindowType:
    if value is None:
        return WindowType.SLIDING
    try:
        return WindowType(str(value))
    except ValueError:
        allowed = ", ".join(t.value for t in WindowType)
        raise InvalidObject(WHERE, f"{where}.windowType", f"got {value!r}; allowed: {allowed}") from None


def _check_cron(text: str, field_name: str) -> None:
    if not text:
        raise InvalidObject(WHERE, field_name, "windowType cron needs a cron expression such as '0 0 * * 1'")
    try:
        CronSim(text, _ANY_TIME)
    except CronSimError as error:
        raise InvalidObject(
            WHERE, field_name, f"got {text!r}: {error}; expected five fields (minute hour day month weekday)"
        ) from None


def _extras(raw: object, where: str) -> tuple[dict[str, float], dict[str, str], list[InvalidObject]]:
    """KAI's ``extraParams`` (strings): query timeout and resolution as Go durations, metric queries as text."""
    if raw is None:
        return {}, {}, []
    if not isinstance(raw, Mapping):
        raise InvalidObject(WHERE, where, "expected a mapping of parameter name to a string")
    durations: dict[str, float] = {}
    metrics: dict[str, str] = {}
    warnings = []
    for key, value in raw.items():
        if key in _DURATIONS:
            try:
                seconds = parse_duration(str(value), WHERE, f"{where}.{key}")
            except InvalidObject as error:
                warnings.append(InvalidObject(WHERE, error.field, f"{error.problem}; the default is used"))
                continue
            if seconds > 0:
                durations[key] = seconds
        elif key in _METRICS:
            metrics[key] = str(value)
        else:
            warnings.append(InvalidObject(WHERE, f"{where}.{key}", "unknown parameter; ignored"))
    return durations, metrics, warnings
