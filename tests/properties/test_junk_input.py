"""Junk through the scenario loader and one simulated cycle: either a one-line file error (ScenarioError) or a run
that reports what it skipped, never any other exception. Files are well-formed clusters with a few values replaced
by junk of any YAML shape (or the whole file is junk); derandomized, so CI never fails by chance."""

import copy
import tempfile
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from kai.components.sim.runner import run_scenario
from kai.components.sim.scenario import ScenarioError, load_scenario

pytestmark = pytest.mark.slow  # run by `make test` (`make properties`), not by `make unit`

_UNLIMITED = {"quota": -1, "limit": -1, "overQuotaWeight": 1}
_CONTAINER = {"name": "main", "resources": {"requests": {"cpu": "1", "nvidia.com/gpu": "1"}, "limits": {}}}
TEMPLATES: tuple[dict[str, Any], ...] = (
    {
        "kind": "Node",
        "metadata": {"name": "n1"},
        "status": {"allocatable": {"cpu": "8", "nvidia.com/gpu": "4", "pods": "9"}},
    },
    {"kind": "Queue", "metadata": {"name": "root"}, "spec": {"resources": {"gpu": _UNLIMITED, "cpu": _UNLIMITED}}},
    {"kind": "Queue", "metadata": {"name": "q"}, "spec": {"parentQueue": "root", "resources": {"gpu": _UNLIMITED}}},
    {"kind": "PriorityClass", "metadata": {"name": "train"}, "value": 50},
    {"kind": "PodGroup", "metadata": {"name": "g", "namespace": "default"}, "spec": {"queue": "q", "minMember": 2}},
    {
        "kind": "Pod",
        "metadata": {"name": "p1", "annotations": {"pod-group-name": "g"}, "labels": {"kai.scheduler/queue": "q"}},
        "spec": {"schedulerName": "kai-scheduler", "priorityClassName": "train", "containers": [_CONTAINER]},
    },
    {
        "kind": "Pod",
        "metadata": {"name": "p2", "labels": {"kai.scheduler/queue": "q"}, "annotations": {"gpu-fraction": "0.5"}},
        "spec": {"schedulerName": "kai-scheduler", "containers": [{"name": "main"}], "initContainers": []},
        "status": {"phase": "Pending"},
    },
    {"kind": "Topology", "metadata": {"name": "t"}, "spec": {"levels": [{"nodeLabel": "zone"}]}},
)
scalars = st.none() | st.booleans() | st.integers(-3, 3) | st.floats(-2, 2) | st.sampled_from(["", "x", "-1", "1.5"])
junk = st.recursive(
    scalars, lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text("abc", max_size=2), inner, max_size=3)
)
DELETE = object()


def _paths(value: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Every place in a value that a mutation can replace (the value itself included)."""
    found = [prefix]
    if isinstance(value, dict):
        for key, item in value.items():
            found += _paths(item, (*prefix, key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            found += _paths(item, (*prefix, index))
    return found


def _mutate(obj: dict[str, Any], edits: list[tuple[int, Any]]) -> Any:
    result: Any = copy.deepcopy(obj)
    for where, replacement in edits:
        paths = _paths(result)
        path = paths[where % len(paths)]
        if not path:
            return None if replacement is DELETE else replacement
        parent = result
        for step in path[:-1]:
            parent = parent[step]
        if replacement is DELETE and isinstance(parent, dict):
            del parent[path[-1]]
        else:
            parent[path[-1]] = None if replacement is DELETE else replacement
    return result


edits = st.lists(st.tuples(st.integers(0, 10_000), junk | st.just(DELETE)), max_size=2)
objects = st.builds(_mutate, st.sampled_from(TEMPLATES), edits)
files = st.one_of(
    st.lists(objects, min_size=1, max_size=10),
    st.lists(objects, min_size=1, max_size=10).map(lambda found: [*TEMPLATES, *found]),
    st.builds(
        lambda found, extra: {"objects": found, **extra},
        st.lists(objects, max_size=8),
        st.dictionaries(st.sampled_from(["config", "now", "runner", "expect"]), junk, max_size=2),
    ),
    junk,
)


@settings(
    max_examples=200,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(content=files)
@example(content=[{"kind": "Pod", "metadata": {"name": "p", "annotations": None}, "spec": TEMPLATES[6]["spec"]}])
def test_junk_never_escapes_as_an_exception(content: Any, caplog: pytest.LogCaptureFixture) -> None:
    caplog.clear()
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "junk.yaml"
        path.write_text(yaml.safe_dump(content))
        try:
            scenario = load_scenario(path)
        except ScenarioError as error:
            assert "\n" not in str(error) and str(path) in str(error)
            return
        run = run_scenario(scenario)
        assert run.cycles, "every run has at least one cycle"
        assert all(problem.message for problem in run.problems)
    assert not [record for record in caplog.records if record.exc_info], "a component logged a traceback"
