"""A CronJob's ``spec.schedule`` and ``spec.timeZone`` as Kubernetes reads them (robfig/cron's standard parser):
five fields (minute, hour, day of month, month, day of week; ``?`` is ``*``, names such as ``JAN`` and ``MON``), the
macros ``@yearly`` … ``@hourly`` and ``@every <duration>`` (whole seconds, at least one), and a ``TZ=``/``CRON_TZ=``
prefix when ``spec.timeZone`` is not set (the API server refuses it on new CronJobs; the controller still runs the
older ones that have it). What the parser refuses (seconds, ``L``, ``W``, ``#``, a day of week 7) is an error naming
the field. Times come from cronsim, made to agree with robfig where the two differ: the day of month and the day of
week are both required only when one of them is a bare ``*`` (a step such as ``*/2`` is a set of days), and a wall
time is matched as it occurs (none on the day clocks spring past it, twice when they fall back over it). The
schedule runs in its zone (UTC when none is given: the kube-controller-manager's usual zone); the Job's
scheduled-timestamp annotation is written in ``spec.timeZone`` only, as the controller does.
"""

import math
import re
from dataclasses import dataclass
from datetime import UTC, datetime, tzinfo
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from cronsim import CronSim, CronSimError

from kai.components.sim.workload_objects import Invalid
from kai.core.model.duration import parse_duration
from kai.core.model.errors import InvalidObject

MACROS = {
    "@yearly": "0 0 1 1 *",
    "@annually": "0 0 1 1 *",
    "@monthly": "0 0 1 * *",
    "@weekly": "0 0 * * 0",
    "@daily": "0 0 * * *",
    "@midnight": "0 0 * * *",
    "@hourly": "0 * * * *",
}
_TERM = r"(?:[0-9]+|[A-Za-z]{3})"
_DAYS = {2: (1, 31), 4: (0, 6)}
"""The day fields (their index) and the days a ``*`` stands for."""
_PART = re.compile(rf"(?:[*?]|{_TERM}(?:-{_TERM})?)(?:/[0-9]+)?")
_FIELD_NAMES = ("minute", "hour", "day-of-month", "month", "day-of-week")
_FIELDS = "expected five fields (minute hour day-of-month month day-of-week) or a macro such as @hourly"
_ANY_TIME = datetime(2000, 1, 1, tzinfo=UTC)


@dataclass(frozen=True)
class CronSchedule:
    expression: str
    """Five fields as cronsim reads them ("" for ``@every``)."""
    every_s: float
    """``@every``'s period (0 for a cron expression)."""
    zone: tzinfo
    stamp_zone: tzinfo = UTC
    """The zone of the Job's scheduled-timestamp annotation: ``spec.timeZone``'s, never a prefix's."""

    def latest(self, after: float, until: float) -> float | None:
        """The latest time the schedule names in (``after``, ``until``], None when it names none there."""
        if self.every_s:  # robfig: every period from the last run on
            periods = math.floor((until - after) / self.every_s)
            return after + periods * self.every_s if periods >= 1 else None
        moment = datetime.fromtimestamp(math.floor(until) + 1, self.zone)  # reverse iteration excludes ``moment``
        found = next(_WallClock(self.expression, moment)).timestamp()
        return found if found > after else None

    def stamp(self, moment: float) -> str:
        """``moment`` in RFC 3339 in ``stamp_zone``, as Go writes it (``Z`` for a zero offset)."""
        text = datetime.fromtimestamp(moment, self.stamp_zone).isoformat()
        return text[:-6] + "Z" if text.endswith("+00:00") else text


class _WallClock(CronSim):
    """cronsim iterating backwards from a moment, matching wall times as they occur (robfig/cron's way) instead of
    Debian cron's daylight-saving fix-ups, which cronsim applies to a schedule at a fixed hour and minute."""

    def __init__(self, expression: str, moment: datetime) -> None:
        super().__init__(expression, moment, reverse=True)
        if self.fixup_tz is not None:
            self.dt, self.fixup_tz = self.dt.replace(tzinfo=self.fixup_tz), None


def parse_schedule(schedule: object, time_zone: object) -> CronSchedule:
    """``spec.schedule`` in ``spec.timeZone``; anything Kubernetes refuses is ``Invalid`` naming the field."""
    if not isinstance(schedule, str) or not schedule.strip():
        raise Invalid("spec.schedule", f"got {schedule!r}; is required: a cron expression such as '*/5 * * * *'")
    text = schedule
    stamp_zone: tzinfo = UTC
    if time_zone is not None:
        if not isinstance(time_zone, str) or not time_zone:
            raise Invalid("spec.timeZone", f"got {time_zone!r}; expected a time zone such as Europe/Berlin")
        stamp_zone = _zone(time_zone, "spec.timeZone")
    zone = stamp_zone
    prefix = re.match(r"(?:CRON_)?TZ=(\S*)\s+", text)
    if prefix:
        if time_zone is not None:
            raise Invalid("spec.schedule", f"got {text!r}: a TZ= prefix and spec.timeZone both; give only timeZone")
        zone, text = _prefix_zone(prefix.group(1)), text[prefix.end() :].strip()
    if text.startswith("@every "):
        try:
            every = parse_duration(text.removeprefix("@every "), "CronJob", "spec.schedule")
        except InvalidObject as error:
            raise Invalid("spec.schedule", f"got {schedule!r}: {error.problem}") from None
        if every <= 0:
            raise Invalid("spec.schedule", f"got {schedule!r}: @every needs a duration longer than 0")
        return CronSchedule("", max(1.0, math.floor(every)), zone, stamp_zone)  # robfig: whole seconds
    if text.startswith("@"):
        if text not in MACROS:
            raise Invalid("spec.schedule", f"got {schedule!r}: unknown macro; allowed: {', '.join(MACROS)}, @every")
        return CronSchedule(MACROS[text], 0.0, zone, stamp_zone)
    fields = text.split()
    if len(fields) != 5:
        raise Invalid("spec.schedule", f"got {schedule!r}: {_FIELDS}")
    for at, name in enumerate(_FIELD_NAMES):
        if not all(_PART.fullmatch(part) for part in fields[at].split(",")):
            allowed = "numbers, names, ranges, steps, * and ?; robfig/cron's standard parser has no L, W or #"
            raise Invalid("spec.schedule", f"got {schedule!r}: {name} {fields[at]!r}: {allowed}")
    if any(int(term) > 6 for part in fields[4].split(",") for term in re.findall(r"[0-9]+", part.split("/")[0])):
        raise Invalid("spec.schedule", f"got {schedule!r}: day-of-week is 0-6 (SUN-SAT); robfig/cron refuses 7")
    fields = [_days(field, *_DAYS[at]) if at in _DAYS else field.replace("?", "*") for at, field in enumerate(fields)]
    expression = " ".join(fields)
    try:
        CronSim(expression, _ANY_TIME)
    except CronSimError as error:
        raise Invalid(
            "spec.schedule", f"got {schedule!r}: {error} (minute hour day-of-month month day-of-week)"
        ) from None
    return CronSchedule(expression, 0.0, zone, stamp_zone)


def _days(field: str, first: int, last: int) -> str:
    """A day field written so that cronsim reads it as robfig does. robfig requires both day fields when one is
    "any": it has a bare ``*`` or ``?`` among its parts (``*/2`` is a set of days: either field may match); cronsim
    when one starts with ``*``. So "any" becomes ``*`` and a stepped ``*`` a range."""
    parts = field.replace("?", "*").split(",")
    if any(part in ("*", "*/1") for part in parts):
        return "*"
    return ",".join(f"{first}-{last}{part[1:]}" if part.startswith("*/") else part for part in parts)


def _zone(name: str, field: str) -> tzinfo:
    if name == "UTC":
        return UTC
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        raise Invalid(field, f"got {name!r}; expected a time zone of the IANA database such as Europe/Berlin") from None


def _prefix_zone(name: str) -> tzinfo:
    """A ``TZ=`` prefix's zone: Go's ``time.LoadLocation`` reads an empty name as UTC and ``Local`` as the
    controller's own zone (UTC here, as when there is no prefix)."""
    if name in ("", "Local"):
        return UTC
    return _zone(name, "spec.schedule")
