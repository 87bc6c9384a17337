"""The registry of actions and plugins is the one place that names them: every action and plugin module is in it,
what the config allows and what a cycle runs come from it, and no other table in src/ lists their names (KAI's
default config aside)."""

from pathlib import Path

import pytest
from core_builders import cluster
from registry_support import literal_tables, module_names, package_names, where

from kai.components.shared.metrics import SEARCHING_ACTIONS
from kai.core.config import parse_config
from kai.core.cycle import open_session
from kai.core.framework.config import DEFAULT_ACTIONS, DEFAULT_PLUGINS
from kai.core.model.errors import InvalidObject
from kai.core.registry import ACTIONS, PLUGINS, Runs
from kai.core.state.snapshot import take_snapshot

KAI_DEFAULTS = {where("kai/core/framework/config.py", "DEFAULT_ACTIONS = (")}
"""KAI's default config (the actions it runs when a config names none) is KAI's data, not a registry."""
HELPERS = {"scores"}
"""Modules of kai/core/plugins that are not plugins: the score tiers the plugins share. A plugin of several modules
is a package whose ``plugin`` module holds it."""


def test_every_action_module_is_registered_under_its_name() -> None:
    assert {name: entry.execute.__module__ for name, entry in ACTIONS.items()} == {
        name: f"kai.core.actions.{name}" for name in module_names(Path("kai/core/actions"))
    }


def test_every_plugin_module_is_registered_and_builds_a_plugin_of_its_name() -> None:
    built = {name: entry.build({}) for name, entry in PLUGINS.items() if entry.build is not None}
    assert {name: plugin.name for name, plugin in built.items()} == {name: name for name in built}
    modules = {plugin.__class__.__module__.removeprefix("kai.core.plugins.") for plugin in built.values()}
    packages = {f"{package}.plugin" for package in package_names(Path("kai/core/plugins"))}
    assert modules == module_names(Path("kai/core/plugins")) - HELPERS | packages


def test_a_plugin_has_a_builder_exactly_when_kai_runs_it_in_a_cycle() -> None:
    assert {name for name, entry in PLUGINS.items() if entry.build is not None} == {
        name for name, entry in PLUGINS.items() if entry.runs is Runs.IN_CYCLE
    }


def test_no_other_table_lists_actions_or_plugins() -> None:
    assert literal_tables(ACTIONS) - KAI_DEFAULTS == set()
    assert literal_tables(PLUGINS) == set()


def test_kai_defaults_name_registered_actions_and_plugins() -> None:
    assert set(DEFAULT_ACTIONS) <= set(ACTIONS)
    assert {name for name, _ in DEFAULT_PLUGINS} <= set(PLUGINS)


def test_the_actions_with_a_search_budget_metric_are_the_registrys_searching_ones() -> None:
    assert SEARCHING_ACTIONS == ("consolidation", "reclaim", "preempt")


def test_the_config_allows_every_registered_name_without_a_warning() -> None:
    config = parse_config({"actions": ", ".join(ACTIONS), "tiers": [{"plugins": [{"name": n} for n in PLUGINS]}]})
    assert config.actions == tuple(ACTIONS)
    assert config.warnings == ()


def test_a_session_opens_every_plugin_kai_runs_and_skips_none() -> None:
    config = parse_config({"tiers": [{"plugins": [{"name": n} for n in PLUGINS]}]})
    ssn = open_session(take_snapshot(cluster(), "kai-scheduler"), config, now=0.0)
    assert ssn.result.skipped == []


@pytest.mark.parametrize(("text", "field"), [("allocate, allocat", "actions"), ("", "tiers[0].plugins[0].name")])
def test_an_unknown_name_is_refused_with_the_allowed_ones_in_kais_order(text: str, field: str) -> None:
    raw = {"actions": text} if text else {"tiers": [{"plugins": [{"name": "binpack"}]}]}
    with pytest.raises(InvalidObject) as refused:
        parse_config(raw)
    assert refused.value.field == field
    allowed = ACTIONS if text else PLUGINS
    assert refused.value.problem.endswith(f"allowed: {', '.join(allowed)}")
