"""KAI v0.17.0's own action tests, as scenarios (kai-v0.17/README.md): every one runs; a failure needs a reason.

An unlisted failure fails, and so does a listed scenario that now passes (the list only shrinks).
"""

from pathlib import Path

import pytest

from kai.components.sim.runner import run_scenario
from kai.components.sim.scenario import load_scenario

SCENARIOS = Path(__file__).resolve().with_name("kai-v0.17")
KNOWN_FAILURES_FILE = Path(__file__).with_name("known_failures.txt")


def _known_failures() -> dict[str, str]:
    known: dict[str, str] = {}
    for line in KNOWN_FAILURES_FILE.read_text().splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        path, _, reason = line.partition("#")
        known[path.strip()] = reason.strip()
    return known


KNOWN = _known_failures()
FILES = sorted(p.relative_to(SCENARIOS).as_posix() for p in SCENARIOS.rglob("*.yaml"))


def test_scenario_folder_is_present() -> None:
    assert SCENARIOS.is_dir(), f"conformance scenarios not found at {SCENARIOS}"
    assert len(FILES) == 317, f"expected KAI v0.17.0's 317 scenarios, found {len(FILES)}"


def test_known_failures_name_existing_scenarios_with_reasons() -> None:
    missing = sorted(set(KNOWN) - set(FILES))
    assert not missing, f"known_failures.txt names scenarios that do not exist: {missing}"
    assert all(KNOWN.values()), "every known failure needs a reason"


@pytest.mark.parametrize("relative", FILES)
def test_scenario(relative: str, request: pytest.FixtureRequest) -> None:
    run = run_scenario(load_scenario(SCENARIOS / relative))
    if relative in KNOWN:
        request.node.user_properties.append(("known_failure", KNOWN[relative]))
        assert not run.passed, f"{relative} passes now: remove it from known_failures.txt ({KNOWN[relative]})"
    else:
        assert run.passed, "\n".join(run.mismatches[:10])
