"""KAI's own action tests, as scenarios: v0.17.0's (kai-v0.17/README.md) and those added after it on KAI's main and
in its pull requests for the features kai follows (kai-main/README.md). Every one runs; a failure needs a reason.

An unlisted failure fails, and so does a listed scenario that now passes (the list only shrinks).
"""

from pathlib import Path

import pytest

from kai.components.sim.runner import run_scenario
from kai.components.sim.scenario import load_scenario

HERE = Path(__file__).resolve().parent
SUITES = {"kai-v0.17": 328, "kai-main": 10}
"""Each folder of scenarios and how many it holds."""
KNOWN_FAILURES_FILE = HERE / "known_failures.txt"


def _known_failures() -> dict[str, str]:
    known: dict[str, str] = {}
    for line in KNOWN_FAILURES_FILE.read_text().splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        path, _, reason = line.partition("#")
        known[path.strip()] = reason.strip()
    return known


KNOWN = _known_failures()
FILES = sorted(p.relative_to(HERE).as_posix() for suite in SUITES for p in (HERE / suite).rglob("*.yaml"))


@pytest.mark.parametrize("suite", sorted(SUITES))
def test_scenario_folder_is_present(suite: str) -> None:
    found = [f for f in FILES if f.startswith(f"{suite}/")]
    assert len(found) == SUITES[suite], f"expected {SUITES[suite]} scenarios in {suite}/, found {len(found)}"


def test_known_failures_name_existing_scenarios_with_reasons() -> None:
    missing = sorted(set(KNOWN) - set(FILES))
    assert not missing, f"known_failures.txt names scenarios that do not exist: {missing}"
    assert all(KNOWN.values()), "every known failure needs a reason"


@pytest.mark.parametrize("relative", FILES)
def test_scenario(relative: str, request: pytest.FixtureRequest) -> None:
    run = run_scenario(load_scenario(HERE / relative))
    if relative in KNOWN:
        request.node.user_properties.append(("known_failure", KNOWN[relative]))
        assert not run.passed, f"{relative} passes now: remove it from known_failures.txt ({KNOWN[relative]})"
    else:
        assert run.passed, "\n".join(run.mismatches[:10])
