"""Every action and every plugin name KAI v0.17 registers, with what kai runs for it, and kai's own two actions
(``overlimiteviction``, ``ungate``: docs/deviations.md): the one place to add one (KAI's
``pkg/scheduler/actions/factory.go`` and ``pkg/scheduler/plugins/factory.go``).

Everything else that names actions or plugins is derived from these two tables: the names a scheduler config may
use and the warnings for arguments kai reads its own way (``kai.core.config``), what a cycle runs (``kai.core.cycle``),
the actions whose victim search has a budget (the scheduler's metrics), a SchedulingShard's default actions and
plugins (the operator). The tables keep KAI's order (kai's own actions last), which is the order an error lists the
allowed names in; KAI's built-in default config (``kai.core.framework.config``) is KAI's data and only names entries
of these tables.
"""

import enum
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from kai.core.actions import allocate, consolidation, overlimiteviction, preempt, reclaim, stalegangeviction, ungate
from kai.core.framework.session import Plugin, Session
from kai.core.plugins import gpujoborder
from kai.core.plugins.dynamicresources import DynamicResourcesPlugin
from kai.core.plugins.elastic import ElasticPlugin
from kai.core.plugins.gpupack import GpuPackPlugin
from kai.core.plugins.gpusharingorder import GpuSharingOrderPlugin
from kai.core.plugins.gpuspread import GpuSpreadPlugin
from kai.core.plugins.kubeflow import KubeflowPlugin
from kai.core.plugins.minruntime import MinRuntimePlugin
from kai.core.plugins.nodeavailability import NodeAvailabilityPlugin
from kai.core.plugins.nodeplacement import NodePlacementPlugin
from kai.core.plugins.nominatednode import NominatedNodePlugin
from kai.core.plugins.numa.plugin import NumaPlugin
from kai.core.plugins.podaffinity import PodAffinityPlugin
from kai.core.plugins.predicates import PredicatesPlugin
from kai.core.plugins.priority import PriorityPlugin
from kai.core.plugins.proportion.plugin import ProportionPlugin
from kai.core.plugins.ray import RayPlugin
from kai.core.plugins.resourcetype import ResourceTypePlugin
from kai.core.plugins.sg_multinodegang import MultiNodeGangPlugin
from kai.core.plugins.sg_nodelocalgreedy import NodeLocalGreedyPlugin
from kai.core.plugins.subgrouporder import SubGroupOrderPlugin
from kai.core.plugins.taskorder import TaskOrderPlugin
from kai.core.plugins.topology import TopologyPlugin

PluginFactory = Callable[[Mapping[str, Any]], Plugin]
ArgumentCheck = Callable[[Mapping[str, Any]], list[tuple[str, str]]]


@dataclass(frozen=True, slots=True)
class ActionEntry:
    name: str
    execute: Callable[[Session], None]
    shard_priority: int | None = None
    """Its place in a SchedulingShard's actions as KAI's operator renders them (higher first); None: kai's own
    action, which the operator does not enable (a config names it to run it)."""
    searches_victims: bool = False
    """It searches for victims under ``scenarioSearchBudgets`` (its budget is exported as a metric)."""


class Runs(enum.Enum):
    """What kai does for a KAI plugin a config names."""

    IN_CYCLE = "its hooks join every session"
    ENDPOINT = "it only serves an HTTP path, which the scheduler's plugin server serves whatever the config says"


@dataclass(frozen=True, slots=True)
class PluginEntry:
    name: str
    runs: Runs
    build: PluginFactory | None = None
    """Makes the plugin from its config ``arguments`` (``IN_CYCLE`` plugins only)."""
    shard_priority: int | None = None
    """Its place in a SchedulingShard's plugins as KAI's operator renders them (higher first); None: the operator
    does not enable it."""
    check_arguments: ArgumentCheck | None = None
    """Arguments kai reads in its own way (as KAI does), as (argument, problem) warnings for the config."""


def _runs(cls: type[Plugin], shard_priority: int | None = None) -> PluginEntry:
    """A plugin kai runs, made without arguments; its name is its class's ``name``."""
    return PluginEntry(cls.name, Runs.IN_CYCLE, lambda _arguments: cls(), shard_priority)


def _runs_with_arguments(
    name: str, build: PluginFactory, shard_priority: int | None = None, check: ArgumentCheck | None = None
) -> PluginEntry:
    """A plugin kai runs, made from its config ``arguments``."""
    return PluginEntry(name, Runs.IN_CYCLE, build, shard_priority, check)


ACTIONS: Mapping[str, ActionEntry] = {
    entry.name: entry
    for entry in (
        ActionEntry(allocate.NAME, allocate.execute, 500),
        ActionEntry(consolidation.NAME, consolidation.execute, 400, searches_victims=True),
        ActionEntry(reclaim.NAME, reclaim.execute, 300, searches_victims=True),
        ActionEntry(preempt.NAME, preempt.execute, 200, searches_victims=True),
        ActionEntry(stalegangeviction.NAME, stalegangeviction.execute, 100),
        ActionEntry(overlimiteviction.NAME, overlimiteviction.execute),  # kai's: evicts down to a cut queue limit
        ActionEntry(ungate.NAME, ungate.execute),  # kai's: lifts the queue-admission gate of pods a queue admits
    )
}

PLUGINS: Mapping[str, PluginEntry] = {
    entry.name: entry
    for entry in (
        _runs(PredicatesPlugin, 1900),
        _runs(PriorityPlugin, 1700),
        _runs_with_arguments(NodePlacementPlugin.name, NodePlacementPlugin, 200),
        _runs(NominatedNodePlugin, 800),
        _runs_with_arguments(NumaPlugin.name, NumaPlugin),
        _runs(NodeAvailabilityPlugin, 1600),
        _runs(GpuSharingOrderPlugin, 100),
        _runs(GpuPackPlugin, 300),
        _runs(GpuSpreadPlugin, 300),
        _runs(ResourceTypePlugin, 1500),
        _runs(PodAffinityPlugin, 1400),
        _runs(ElasticPlugin, 1300),
        _runs(KubeflowPlugin, 1200),
        _runs(RayPlugin, 1100),
        _runs(TaskOrderPlugin, 900),
        _runs(SubGroupOrderPlugin, 1000),
        _runs(DynamicResourcesPlugin, 700),
        _runs(TopologyPlugin, 500),
        _runs_with_arguments(ProportionPlugin.name, ProportionPlugin, 1800),
        _runs_with_arguments(MinRuntimePlugin.name, MinRuntimePlugin, 600),
        PluginEntry("snapshot", Runs.ENDPOINT, shard_priority=400),
        _runs(NodeLocalGreedyPlugin, 360),
        _runs(MultiNodeGangPlugin, 350),
        PluginEntry("reflectjoborder", Runs.ENDPOINT),
        _runs_with_arguments(
            gpujoborder.GpuJobOrderPlugin.name, gpujoborder.GpuJobOrderPlugin, check=gpujoborder.argument_warnings
        ),  # KAI #1995
    )
}
