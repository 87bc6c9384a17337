"""``usageDBConfig`` in the scheduler config: KAI's names and defaults, and clear errors for bad values."""

from typing import Any

import pytest

from kai.core.config import parse_config
from kai.core.framework.usage.usage_config import DEFAULT_CAPACITY_METRICS, UsageParams, WindowType
from kai.core.model.errors import InvalidObject
from kai.core.model.meta import parse_time


def usage_config(**fields: Any) -> dict[str, Any]:
    return {"usageDBConfig": {"clientType": "builtin", **fields}}


def test_without_usage_db_config_time_based_fair_share_is_off() -> None:
    assert parse_config({}).usage_db is None


def test_kai_defaults() -> None:
    config = parse_config(usage_config())
    assert config.usage_db is not None
    assert config.usage_db.params == UsageParams()
    params = config.usage_db.params
    assert (params.half_life_s, params.window_s, params.window_type) == (None, 7 * 86400, WindowType.SLIDING)
    assert (params.fetch_interval_s, params.staleness_s, params.wait_timeout_s) == (60, 300, 60)
    assert (params.query_timeout_s, params.query_resolution_s) == (10, 60)
    assert params.capacity_metrics == DEFAULT_CAPACITY_METRICS
    assert config.warnings == ()


def test_kai_usage_params_are_read() -> None:
    params = {
        "halfLifePeriod": "10m",
        "windowSize": "2d12h",
        "windowType": "tumbling",
        "tumblingWindowStartTime": "2025-01-01T00:00:00Z",
        "fetchInterval": "30s",
        "stalenessPeriod": "2m",
        "waitTimeout": "5s",
        "extraParams": {"queryResolution": "30s", "gpuAllocationMetric": "my_gpus", "usageQueryTimeout": "3s"},
    }
    config = parse_config(
        {"usageDBConfig": {"clientType": "prometheus", "connectionString": "http://prom:9090", "usageParams": params}}
    )
    assert config.usage_db is not None
    got = config.usage_db.params
    assert (got.half_life_s, got.window_s, got.window_text) == (600, 2.5 * 86400, "2d12h")
    assert (got.window_type, got.tumbling_start) == (WindowType.TUMBLING, parse_time("2025-01-01T00:00:00Z", "", ""))
    assert (got.fetch_interval_s, got.staleness_s, got.wait_timeout_s) == (30, 120, 5)
    assert (got.query_resolution_s, got.query_timeout_s) == (30, 3)
    assert got.allocation_metrics["gpu"] == "my_gpus"
    assert got.allocation_metrics["cpu"] == "kai_queue_allocated_cpu_cores"
    assert config.usage_db.connection_string == "http://prom:9090"


@pytest.mark.parametrize("half_life", ["0s", "-3m"])
def test_a_half_life_of_zero_or_less_turns_decay_off(half_life: str) -> None:
    config = parse_config(usage_config(usageParams={"halfLifePeriod": half_life}))
    assert config.usage_db is not None and config.usage_db.params.half_life_s is None


def test_a_staleness_period_below_the_fetch_interval_is_raised_to_it_with_a_warning() -> None:
    config = parse_config(usage_config(usageParams={"fetchInterval": "2m", "stalenessPeriod": "1m"}))
    assert config.usage_db is not None and config.usage_db.params.staleness_s == 120
    assert [str(w) for w in config.warnings] == [
        "scheduler config: field usageDBConfig.usageParams.stalenessPeriod: shorter than fetchInterval; "
        "fetchInterval is used"
    ]


def test_what_kai_ignores_is_a_warning() -> None:
    config = parse_config(
        usage_config(usageParams={"halfLife": "1h", "extraParams": {"queryResolution": "soon", "other": "x"}})
    )
    assert [str(w) for w in config.warnings] == [
        "scheduler config: field usageDBConfig.usageParams.halfLife: unknown key; ignored",
        "scheduler config: field usageDBConfig.usageParams.extraParams.queryResolution: got 'soon'; expected a "
        "duration such as 60s, 1m30s, 2h or -1s; the default is used",
        "scheduler config: field usageDBConfig.usageParams.extraParams.other: unknown parameter; ignored",
    ]
    assert config.usage_db is not None and config.usage_db.params.query_resolution_s == 60


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        ({"clientType": "fake"}, "usageDBConfig.clientType: got 'fake'; allowed: builtin, prometheus"),
        ({}, "usageDBConfig.clientType: missing; allowed: builtin, prometheus"),
        ({"clientType": "prometheus"}, "usageDBConfig.connectionString: clientType prometheus needs the server's URL"),
        (
            {"clientType": "prometheus", "connectionString": "http://p", "connectionStringEnvVar": "PROM"},
            "usageDBConfig.connectionString: set together with connectionStringEnvVar; only one is allowed",
        ),
        (
            {"clientType": "builtin", "connectionString": "usage"},
            "usageDBConfig.connectionString: got 'usage'; clientType builtin expects a ConfigMap as namespace/name",
        ),
        (
            {"clientType": "builtin", "usageParams": {"windowType": "hopping"}},
            "usageDBConfig.usageParams.windowType: got 'hopping'; allowed: sliding, tumbling, cron",
        ),
        (
            {"clientType": "builtin", "usageParams": {"windowType": "tumbling"}},
            "usageDBConfig.usageParams.tumblingWindowStartTime: windowType tumbling needs the time its first window",
        ),
        (
            {"clientType": "builtin", "usageParams": {"windowType": "cron", "cronString": "every hour"}},
            "usageDBConfig.usageParams.cronString: got 'every hour': ",
        ),
        (
            {"clientType": "builtin", "usageParams": {"windowType": "cron"}},
            "usageDBConfig.usageParams.cronString: windowType cron needs a cron expression such as '0 0 * * 1'",
        ),
        (
            {"clientType": "builtin", "usageParams": {"windowSize": "1.5h"}},
            "usageDBConfig.usageParams.windowSize: got '1.5h'; expected a Prometheus duration such as 1w, 2d",
        ),
        (
            {"clientType": "builtin", "usageParams": {"windowSize": "0s"}},
            "usageDBConfig.usageParams.windowSize: got '0s'; must be longer than 0",
        ),
        (
            {"clientType": "builtin", "usageParams": {"fetchInterval": "0s"}},
            "usageDBConfig.usageParams.fetchInterval: got '0s'; must be longer than 0",
        ),
        (
            {"clientType": "builtin", "usageParams": {"halfLifePeriod": "an hour"}},
            "usageDBConfig.usageParams.halfLifePeriod: got 'an hour'; expected a duration",
        ),
        ({"clientType": "builtin", "usageParams": ["1h"]}, "usageDBConfig.usageParams: expected a mapping"),
    ],
)
def test_bad_usage_config_names_the_field_and_what_is_allowed(raw: dict[str, Any], message: str) -> None:
    with pytest.raises(InvalidObject) as error:
        parse_config({"usageDBConfig": raw})
    assert str(error.value).startswith(f"scheduler config: field {message}")
