"""Which stretch of history counts as a queue's usage at a given moment, for each of KAI's window types.

Sliding: the last ``windowSize``. Tumbling: since the latest boundary ``tumblingWindowStartTime + n·windowSize`` before
now (now itself, while the first window has not begun). Cron: since the latest time the cron expression names before
now. Exactly at a boundary the window that ends there is still the current one, as in KAI
(``getLatestUsageResetTime_*``). Cron times are read in UTC.
"""

import math
from datetime import UTC, datetime
from itertools import islice, pairwise

from cronsim import CronSim

from kai.core.framework.usage.usage_config import UsageParams, WindowType

CRON_SPAN_SAMPLES = 12
"""Consecutive cron intervals measured to size the history a cron window needs (a monthly cron's longest month)."""
_REFERENCE = datetime(2025, 1, 1, tzinfo=UTC)


def window_start(params: UsageParams, now: float) -> float:
    """Where the usage window current at ``now`` begins (POSIX seconds)."""
    match params.window_type:
        case WindowType.SLIDING:
            return now - params.window_s
        case WindowType.TUMBLING:
            start = now if params.tumbling_start is None else params.tumbling_start
            return tumbling_reset(start, params.window_s, now)
        case WindowType.CRON:
            return cron_reset(params.cron, now)


def tumbling_reset(start: float, size: float, now: float) -> float:
    """The latest boundary ``start + n·size`` strictly before ``now``; ``now`` until the first window begins."""
    if start >= now:
        return now
    windows = math.floor((now - start) / size)
    reset = start + windows * size
    return reset - size if reset >= now else reset


def cron_reset(expression: str, now: float) -> float:
    """The latest time the cron expression names strictly before ``now``."""
    moment = datetime.fromtimestamp(now, UTC)
    return next(CronSim(expression, moment, reverse=True)).timestamp()


def window_span(params: UsageParams) -> float:
    """The longest stretch of history a window can cover: ``windowSize``, or a cron expression's longest interval."""
    if params.window_type is not WindowType.CRON:
        return params.window_s
    times = [t.timestamp() for t in islice(CronSim(params.cron, _REFERENCE), CRON_SPAN_SAMPLES + 1)]
    return max(later - earlier for earlier, later in pairwise(times))
