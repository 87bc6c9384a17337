"""Scenario files (docs/scenario-format.md): plain Kubernetes objects, the scheduler config, and expectations.

A file that cannot be used gets one clear error naming the file, the field and what is allowed; an object in it
that cannot be used is reported in ``Scenario.problems`` and skipped (``envelope``).
"""

import dataclasses
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kai.cluster.yamlfile import YamlFileError, read_documents
from kai.components.scheduler.conditions import DEFAULT_NODE_POOL
from kai.components.scheduler.node_pool import NodePool
from kai.components.scheduler.snapshot_format import SnapshotFormatError
from kai.components.sim.envelope import usable_objects
from kai.components.sim.problems import Problem
from kai.components.sim.snapshot_file import is_snapshot, load_snapshot, newest_time
from kai.core.config import parse_config
from kai.core.framework.config import SchedulerConfig
from kai.core.model.duration import parse_duration
from kai.core.model.errors import InvalidObject
from kai.core.model.meta import parse_time


class ScenarioError(ValueError):
    pass


STOCK_PRIORITY_CLASSES = {"train": 50, "build-preemptible": 75, "build": 100, "inference": 125}
"""The priority classes KAI's Helm chart installs (its templates/priorityclasses.yaml, the same as
deploy/priority-classes.yaml; test_chart proves all three equal): plain manifests are simulated as on a cluster with
KAI installed, so these exist unless the manifests define a class of the same name."""


SCENARIO_KEYS = frozenset({"name", "source", "config", "now", "runner", "objects", "expect", "notes", "clock"})
"""The top-level keys of a scenario file (docs/scenario-format.md)."""


@dataclass
class Runner:
    cycles_before_check: int = 1
    check_cycles: int = 0
    podgroups_being_deleted: set[str] = field(default_factory=set)
    multi_cycle: bool = False


@dataclass(frozen=True)
class ClockSpec:
    """How simulated time moves (a kai extension, scenario-format.md §8): ``period_s`` between cycles (0: frozen),
    for ``duration_s`` of simulated time (None: the cycle count decides)."""

    period_s: float = 0.0
    duration_s: float | None = None
    sample_every_s: float | None = None
    """Rows of the timeline table: one per this much simulated time (None: about 24 rows)."""

    def merged(self, override: "ClockSpec") -> "ClockSpec":
        """This spec with what ``override`` (the command line) sets."""
        return ClockSpec(
            override.period_s or self.period_s,
            override.duration_s if override.duration_s is not None else self.duration_s,
            override.sample_every_s if override.sample_every_s is not None else self.sample_every_s,
        )


@dataclass
class Scenario:
    path: Path
    name: str
    config: SchedulerConfig
    now: float
    objects: list[dict[str, Any]]
    expect: dict[str, Any]
    runner: Runner
    problems: list[Problem] = field(default_factory=list)
    """Entries of the file that are not usable objects (skipped), in file order."""
    clock: ClockSpec = field(default_factory=ClockSpec)
    node_pool: NodePool | None = None
    """The shard a snapshot was taken in, whose objects the run schedules as its scheduler would; None: one pool,
    ``default``, of every object (docs/deviations.md)."""
    podgroups_elsewhere: frozenset[str] = frozenset()
    """PodGroups its pods name that it does not hold, known to be other pools' (a shard's snapshot lists every pod but
    only its own pool's PodGroups): their pods only take room on their nodes."""
    search_timer: Callable[[], float] | None = None
    """The clock of the victim search's budgets (``scenarioSearchBudgets``): a live cluster's, the scheduler's own
    (``time.perf_counter``), so that its dry cycle searches no longer than the scheduler would; None: a simulation's
    frozen one, on which no budget runs out (runs of a file are the same on any machine)."""

    def in_pool(self, pool: NodePool | None) -> "Scenario":
        """This scenario run as the scheduler of ``pool`` would run it (None: one pool of every object)."""
        config = dataclasses.replace(self.config, node_pool=pool.name if pool is not None else DEFAULT_NODE_POOL)
        return dataclasses.replace(self, config=config, node_pool=pool)


def _expect_int(block: dict[str, Any], key: str, default: int, where: str) -> int:
    value = block.get(key, default)
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ScenarioError(f"{where}: field runner.{key}: expected a non-negative integer, got {value!r}")
    return value


def _read(path: Path) -> tuple[dict[str, Any], bool]:
    """A file as a scenario mapping with ``objects``, and whether it was plain manifests (no scenario keys)."""
    where = str(path)
    try:
        documents = read_documents(path)
    except YamlFileError as err:
        raise ScenarioError(str(err)) from err
    raw: Any = documents[0] if len(documents) == 1 else documents
    if isinstance(raw, list):
        return {"objects": raw}, True
    if not isinstance(raw, dict):
        raise ScenarioError(
            f"{where}: expected Kubernetes objects (one, a list, several YAML documents) or a scenario with objects"
        )
    if "objects" not in raw and "kind" in raw:
        return {"objects": [raw]}, True
    return raw, False


def _entries(path: Path, raw: dict[str, Any], label: str = "") -> list[tuple[str, Any]]:
    entries = raw.get("objects") or []
    if not isinstance(entries, list):
        raise ScenarioError(f"{path}: field objects: expected a list of Kubernetes objects")
    if not entries:
        unknown = sorted(str(key) for key in raw if key not in SCENARIO_KEYS)
        if unknown and "objects" not in raw:
            raise ScenarioError(
                f"{path}: neither Kubernetes objects (no kind) nor a scenario (no objects): its top-level keys are "
                f"{', '.join(unknown[:6])}{', …' if len(unknown) > 6 else ''}"
            )
        raise ScenarioError(f"{path}: holds no Kubernetes objects (an empty file, or a scenario without objects)")
    return [(f"{label}objects[{index}]", entry) for index, entry in enumerate(entries)]


def load_scenario(path: Path, cycles: int | None = None, clock: ClockSpec | None = None) -> Scenario:
    """A scenario file, or plain manifests (one object, a list, or several YAML documents) as a one-cycle run."""
    raw, plain = _read(path)
    return _build(path, str(raw.get("name") or path.stem), raw, _entries(path, raw), cycles, clock, plain)


def load_scenarios(
    paths: list[Path], cycles: int | None = None, clock: ClockSpec | None = None
) -> list[tuple[Path, Scenario | ScenarioError]]:
    """What ``kai simulate PATH...`` runs, in order: each scenario file on its own, and all plain manifests together
    as one cluster (as ``kubectl apply -f a.yaml -f b.yaml`` would build it), at the place of the first of them.
    A file that cannot be used is its own error; the others still run."""
    runs: list[tuple[Path, Scenario | ScenarioError] | None] = []  # None: the place of the combined manifests
    manifests: list[tuple[Path, list[tuple[str, Any]]]] = []
    for path in paths:
        try:
            if is_snapshot(path):
                runs.append((path, snapshot_scenario(path, cycles, clock)))
                continue
            raw, plain = _read(path)
            if not plain:
                name = str(raw.get("name") or path.stem)
                runs.append((path, _build(path, name, raw, _entries(path, raw), cycles, clock)))
                continue
            if not manifests:
                runs.append(None)
            manifests.append((path, _entries(path, raw, f"{path} " if len(paths) > 1 else "")))
        except ScenarioError as error:
            runs.append((path, error))
    if manifests:
        first = manifests[0][0]
        name = " + ".join(path.stem for path, _ in manifests)
        entries = [entry for _, file_entries in manifests for entry in file_entries]
        combined: Scenario | ScenarioError
        try:
            combined = _build(first, name, {}, entries, cycles, clock, plain=True)
        except ScenarioError as error:
            combined = error
        runs[runs.index(None)] = (first, combined)
    return [run for run in runs if run is not None]


def snapshot_scenario(path: Path, cycles: int | None = None, clock: ClockSpec | None = None) -> Scenario:
    """A KAI snapshot zip as a scenario: its objects and config, at the time it was taken, one cycle by default
    (or as many as the clock's duration covers)."""
    try:
        loaded = load_snapshot(path)
    except SnapshotFormatError as error:
        raise ScenarioError(str(error)) from error
    clock = clock or ClockSpec()
    runner = Runner(cycles_before_check=cycles or clock_cycles(clock) or 1)
    return Scenario(
        path,
        path.stem,
        loaded.config,
        loaded.now,
        loaded.objects,
        {},
        runner,
        loaded.problems,
        clock,
        loaded.node_pool,
        loaded.podgroups_elsewhere,
    )


def clock_cycles(clock: ClockSpec) -> int | None:
    """The cycles that cover the clock's duration (None without one)."""
    if clock.duration_s is None or not clock.period_s:
        return None
    return max(1, math.ceil(clock.duration_s / clock.period_s - 1e-9))


def _stock_priority_classes(objects: list[dict[str, Any]]) -> list[dict[str, Any]]:
    defined = {obj["metadata"]["name"] for obj in objects if obj["kind"] == "PriorityClass"}
    return [
        {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": name}, "value": value}
        for name, value in STOCK_PRIORITY_CLASSES.items()
        if name not in defined
    ]


def _build(
    path: Path,
    name: str,
    raw: dict[str, Any],
    entries: list[tuple[str, Any]],
    cycles: int | None,
    clock_override: ClockSpec | None,
    plain: bool = False,
) -> Scenario:
    """``plain``: the entries are manifests, not a scenario: KAI's stock priority classes are added, and the clock
    starts at the newest time an object mentions, as a KAI snapshot's does (0 when none does: ``meta.untimed``)."""
    where = str(path)
    objects, problems = usable_objects(entries)
    if plain:
        objects += _stock_priority_classes(objects)
    try:
        config = parse_config(raw.get("config") or {})
        now = parse_time(raw["now"], where, "now") if raw.get("now") else newest_time(objects) if plain else 0.0
        clock = _clock(raw.get("clock"), where).merged(clock_override or ClockSpec())
    except InvalidObject as err:
        raise ScenarioError(f"{where}: {err}") from err
    if clock.duration_s is not None and not clock.period_s:
        raise ScenarioError(f"{where}: field clock.duration: needs a period (clock.period or --period) to advance by")
    runner_raw = raw.get("runner")
    if runner_raw is not None and not isinstance(runner_raw, dict):
        raise ScenarioError(f"{where}: field runner: expected a mapping")
    if runner_raw:
        deleting = runner_raw.get("podGroupsBeingDeleted") or []
        if not isinstance(deleting, list):
            raise ScenarioError(f"{where}: field runner.podGroupsBeingDeleted: expected a list of namespace/name")
        runner = Runner(
            _expect_int(runner_raw, "cyclesBeforeCheck", 2, where),
            _expect_int(runner_raw, "checkCycles", 5, where),
            {str(k) for k in deleting},
            True,
        )
    else:
        runner = Runner()
    if cycles is not None:
        runner.cycles_before_check = cycles
    elif (covered := clock_cycles(clock)) is not None and not runner.multi_cycle:
        runner.cycles_before_check = covered
    expect = raw.get("expect") or {}
    if not isinstance(expect, dict):
        raise ScenarioError(f"{where}: field expect: expected a mapping")
    return Scenario(path, name, config, now, objects, expect, runner, problems, clock)


def _clock(raw: object, where: str) -> ClockSpec:
    """The ``clock`` block: ``period``, ``duration`` and ``sampleEvery`` as Go durations (days allowed)."""
    if raw is None:
        return ClockSpec()
    if not isinstance(raw, dict):
        raise InvalidObject(where, "clock", "expected a mapping with period, duration and sampleEvery")

    def seconds(key: str) -> float | None:
        value = raw.get(key)
        if value is None:
            return None
        amount = parse_duration(str(value), where, f"clock.{key}", days=True)
        if amount <= 0:
            raise InvalidObject(where, f"clock.{key}", f"got {value!r}; must be longer than 0")
        return amount

    unknown = sorted(set(raw) - {"period", "duration", "sampleEvery"})
    if unknown:
        raise InvalidObject(where, f"clock.{unknown[0]}", "unknown key; allowed: period, duration, sampleEvery")
    return ClockSpec(seconds("period") or 0.0, seconds("duration"), seconds("sampleEvery"))


def scenario_files(paths: list[Path]) -> list[Path]:
    files: list[Path] = []
    for path in paths:
        if path.is_dir():
            files.extend(sorted(p for p in path.rglob("*.yaml") if p.name != "README.yaml"))
        else:
            files.append(path)
    return files
