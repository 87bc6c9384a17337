"""`kai simulate --check` prints KAI-style check lines and exits non-zero on a failure."""

from pathlib import Path

from click.testing import CliRunner
from repo import REPO

from kai.cli.main import main

SCENARIOS = REPO / "tests" / "conformance" / "kai-v0.17"


def test_check_output_and_exit_code(tmp_path: Path) -> None:
    good = SCENARIOS / "allocate" / "allocateGang_test" / "000-allocate-train-gang-job.yaml"
    broken = tmp_path / "broken.yaml"
    broken.write_text("objects: 7\n")
    result = CliRunner().invoke(main, ["simulate", str(good), str(broken), "--check"])
    lines = result.output.splitlines()
    assert lines[0] == f"PASS {good}"
    assert lines[1] == f"FAIL {broken}"
    assert "field objects" in lines[2] and lines[2].startswith("    ")
    assert lines[-1] == "1 passed, 1 failed"
    assert result.exit_code == 1
