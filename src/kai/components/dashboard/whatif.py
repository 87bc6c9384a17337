"""What-if runs asked for on the page: ``kai simulate --what-if`` on the input of the latest look, run on a thread
while the page polls, and drawn as both runs.

The form takes what the command line takes, one change a line: ``queue.NAME.gpu.quota=V`` and the other ``--set``
fields, ``add-nodes N:like=NODE``, ``remove-node NODE``; or a change file (YAML, docs/what-if.md), as ``kai explain
-o json`` gives each fix; with the duration, period and default run time (the CLI's defaults). A change that cannot
be made is refused at once with the CLI's words. One run at a time: a run is two simulations of the whole cluster,
and the machine serving the page is often a laptop.
"""

import threading
import uuid
from collections import OrderedDict
from collections.abc import Mapping
from typing import Any

import yaml

from kai.components.sim.scenario import ClockSpec, Scenario, clock_cycles
from kai.components.sim.whatif.apply import apply_changes
from kai.components.sim.whatif.changes import ChangeError, Changes, parse_add_nodes, parse_changes, parse_set
from kai.components.sim.whatif.compare import Assumptions, Comparison, RunMetrics, compare
from kai.components.sim.whatif.report import ARROW, as_json, queue_rows, totals
from kai.core.model.duration import parse_duration
from kai.core.model.errors import InvalidObject

DEFAULTS = {"duration": "2h", "period": "1m", "defaultRunTime": "1h"}
"""The form's defaults: ``kai simulate``'s period and default run time, and a duration worth a look."""
KEPT = 8
"""Finished runs kept for the pages that asked for them."""
QUEUE_COLUMNS = ("queue", "pods started", "time to start p50 / max", "pending at end", "mean GPUs", "mean fair share")
"""The columns of ``report.queue_rows`` (the CLI's per-queue table)."""


class Busy(RuntimeError):
    """A run is going on; the page waits for it."""


class WhatIfRequest:
    """A page's what-if form, checked: the changes, and the clock both runs share."""

    def __init__(self, form: Mapping[str, Any]) -> None:
        self.changes = _changes(str(form.get("changes") or ""), str(form.get("changeFile") or ""))
        if self.changes.empty:
            raise ChangeError("no change given: write at least one, such as queue.team-a.gpu.quota=8")
        period = _seconds(form, "period")
        duration = _seconds(form, "duration")
        if period <= 0 or duration < period:
            raise ChangeError(f"duration {form.get('duration')}: must be at least one period ({form.get('period')})")
        self.period_s = period
        self.cycles = clock_cycles(ClockSpec(period, duration)) or 1
        run_time = str(form.get("defaultRunTime") or DEFAULTS["defaultRunTime"]).strip()
        self.default_run_time_s = None if run_time == "none" else _seconds(form, "defaultRunTime")


def _changes(lines: str, change_file: str) -> Changes:
    changes = Changes()
    if change_file.strip():
        try:
            raw = yaml.safe_load(change_file)
        except yaml.YAMLError as error:
            raise ChangeError(f"the change file: not valid YAML: {' '.join(str(error).split())}") from None
        if not isinstance(raw, dict):
            raise ChangeError("the change file: expected one mapping with queues, nodes, scheduler or submit")
        changes.extend(parse_changes(raw, "the change file"))
    for line in (line.strip() for line in lines.splitlines()):
        verb, _, rest = line.partition(" ")
        if not line or line.startswith("#"):
            continue
        if verb == "add-nodes":
            changes.extend(parse_add_nodes(rest.strip()))
        elif verb == "remove-node":
            changes.remove_nodes.append(rest.strip())
        else:
            changes.extend(parse_set(line))
    return changes


def _seconds(form: Mapping[str, Any], field: str) -> float:
    text = str(form.get(field) or DEFAULTS[field]).strip()
    try:
        return parse_duration(text, "the what-if form", field, days=True)
    except InvalidObject as error:
        raise ChangeError(str(error)) from None


class WhatIfRuns:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._runs: OrderedDict[str, dict[str, Any]] = OrderedDict()
        self._running: str | None = None

    def start(self, scenario: Scenario, request: WhatIfRequest) -> str:
        """The new run's id; ``ChangeError`` for a change the input cannot take, ``Busy`` while a run goes on."""
        changed = apply_changes(scenario, request.changes)
        with self._lock:
            if self._running is not None:
                raise Busy(f"what-if {self._running} is running; wait for it to finish")
            run = uuid.uuid4().hex[:12]
            self._running = run
            self._runs[run] = {"id": run, "state": "running", "cycle": 0, "cycles": request.cycles}
            while len(self._runs) > KEPT:
                self._runs.popitem(last=False)
        thread = threading.Thread(
            target=self._run, args=(run, scenario, changed, request), name=f"kai-what-if-{run}", daemon=True
        )
        thread.start()
        return run

    def _run(self, run: str, scenario: Scenario, changed: Scenario, request: WhatIfRequest) -> None:
        def progress(cycle: int) -> None:
            self._runs[run]["cycle"] = cycle

        try:
            given = Assumptions(
                (scenario.name,), scenario.now, request.cycles, request.period_s, request.default_run_time_s
            )
            comparison = compare(scenario, changed, given, request.changes.describe(), progress)
            outcome = {"state": "done", "result": comparison_json(comparison)}
        except Exception as error:  # a kai bug: said on the page; the dashboard goes on
            outcome = {"state": "failed", "error": f"kai failed on this what-if ({type(error).__name__}: {error})"}
        with self._lock:
            self._runs[run].update(outcome)
            self._running = None

    def get(self, run: str) -> dict[str, Any] | None:
        with self._lock:
            found = self._runs.get(run)
            return dict(found) if found is not None else None


def comparison_json(comparison: Comparison) -> dict[str, Any]:
    """The CLI's report (its totals and per-queue rows, as the terminal shows them) and both runs over time: each
    leaf queue's GPUs allocated and the cluster's GPU utilisation at every cycle."""
    base, changed = comparison.base, comparison.changed
    return {
        **as_json(comparison),
        "totals": [list(row) for row in totals(comparison)],
        "queueColumns": list(QUEUE_COLUMNS),
        "queueRows": [list(row) for row in queue_rows(comparison)],
        "arrow": ARROW,
        "elapsed": [sample.elapsed_s for sample in base.timeline],
        "runs": {"base": _over_time(base, comparison), "changed": _over_time(changed, comparison)},
    }


def _over_time(run: RunMetrics, comparison: Comparison) -> dict[str, Any]:
    return {
        "utilisation": [round(value, 4) for value in run.utilisation()],
        "queues": {
            queue: [round(s.queues[queue].allocated["gpu"], 3) if queue in s.queues else None for s in run.timeline]
            for queue in comparison.queues()
        },
    }
