"""A CronJob's ``spec.schedule`` and ``spec.timeZone`` as Kubernetes reads them (robfig/cron's standard parser):
five fields (minute, hour, day of month, month, day of week; ``?`` is ``*``, names such as ``JAN`` and ``MON``), the
macros ``@yearly`` … ``@hourly`` and ``@every <duration>``, and a ``TZ=``/``CRON_TZ=`` prefix when ``spec.timeZone``
is not set. What Kubernetes refuses (seconds, ``L``, ``W``, ``#``) is an error naming the field. Times come from
cronsim, in the schedule's time zone (UTC when none is given: the kube-controller-manager's usual zone).
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
_PART = re.compile(rf"(?:[*?]|{_TERM}(?:-{_TERM})?)(?:/[0-9]+)?")
_FIELDS = "expected five fields (minute hour day-of-month month day-of-week) or a macro such as @hourly"
_ANY_TIME = datetime(2000, 1, 1, tzinfo=UTC)


@dataclass(frozen=True)
class CronSchedule:
    expression: str
    """Five fields as cronsim reads them ("" for ``@every``)."""
    every_s: float
    """``@every``'s period (0 for a cron expression)."""
    zone: tzinfo

    def latest(self, after: float, until: float) -> float | None:
        """The latest time the schedule names in (``after``, ``until``], None when it names none there."""
        if self.every_s:  # robfig: every period from the last run on
            periods = math.floor((until - after) / self.every_s)
            return after + periods * self.every_s if periods >= 1 else None
        moment = datetime.fromtimestamp(math.floor(until) + 1, self.zone)  # reverse iteration excludes ``moment``
        found = next(CronSim(self.expression, moment, reverse=True)).timestamp()
        return found if found > after else None

    def in_zone(self, moment: float) -> str:
        """``moment`` in RFC 3339 in the schedule's zone, as Go writes it (``Z`` for a zero offset)."""
        text = datetime.fromtimestamp(moment, self.zone).isoformat()
        return text[:-6] + "Z" if text.endswith("+00:00") else text


def parse_schedule(schedule: object, time_zone: object) -> CronSchedule:
    """``spec.schedule`` in ``spec.timeZone``; anything Kubernetes refuses is ``Invalid`` naming the field."""
    if not isinstance(schedule, str) or not schedule.strip():
        raise Invalid("spec.schedule", f"got {schedule!r}; is required: a cron expression such as '*/5 * * * *'")
    text = schedule.strip()
    zone_name = None
    if time_zone is not None:
        if not isinstance(time_zone, str) or not time_zone:
            raise Invalid("spec.timeZone", f"got {time_zone!r}; expected a time zone such as Europe/Berlin")
        zone_name = time_zone
    prefix = re.match(r"(?:CRON_)?TZ=(\S*)\s+", text)
    if prefix:
        if zone_name is not None:
            raise Invalid("spec.schedule", f"got {text!r}: a TZ= prefix and spec.timeZone both; give only timeZone")
        zone_name, text = prefix.group(1), text[prefix.end() :]
    zone = _zone(zone_name, "spec.timeZone" if time_zone is not None else "spec.schedule")
    if text.startswith("@every "):
        try:
            every = parse_duration(text.removeprefix("@every ").strip(), "CronJob", "spec.schedule")
        except InvalidObject as error:
            raise Invalid("spec.schedule", f"got {schedule!r}: {error.problem}") from None
        if every <= 0:
            raise Invalid("spec.schedule", f"got {schedule!r}: @every needs a duration longer than 0")
        return CronSchedule("", max(1.0, round(every)), zone)
    if text.startswith("@"):
        if text not in MACROS:
            raise Invalid("spec.schedule", f"got {schedule!r}: unknown macro; allowed: {', '.join(MACROS)}, @every")
        return CronSchedule(MACROS[text], 0.0, zone)
    fields = text.split()
    if len(fields) != 5 or not all(_PART.fullmatch(part) for f in fields for part in f.split(",")):
        raise Invalid("spec.schedule", f"got {schedule!r}: {_FIELDS}")
    if any(int(term) > 6 for part in fields[4].split(",") for term in re.findall(r"[0-9]+", part.split("/")[0])):
        raise Invalid("spec.schedule", f"got {schedule!r}: day-of-week is 0-6 (SUN-SAT); robfig/cron refuses 7")
    expression = " ".join(fields).replace("?", "*")
    try:
        CronSim(expression, _ANY_TIME)
    except CronSimError as error:
        raise Invalid(
            "spec.schedule", f"got {schedule!r}: {error} (minute hour day-of-month month day-of-week)"
        ) from None
    return CronSchedule(expression, 0.0, zone)


def _zone(name: str | None, field: str) -> tzinfo:
    if name is None or name == "UTC":
        return UTC
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        raise Invalid(field, f"got {name!r}; expected a time zone of the IANA database such as Europe/Berlin") from None
