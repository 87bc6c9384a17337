"""The cluster of issue 27, as a new user would write it (examples/research): 4 nodes of 8 GPUs; queue research
with team-llm (quota 16, limit 32, weight 2) and team-vision (16, 24, 1); a PyTorchJob of a master and 3 workers of
8 GPUs; a RayCluster of a head and 4 workers of 2 GPUs; a Deployment of 3 pods at gpu-fraction 0.5; a Job asking
100 GPUs; a notebook pod labelled with a misspelt queue (team-visoin)."""

import json
from pathlib import Path
from typing import Any

from click.testing import CliRunner
from repo import REPO

from kai.cli.main import main

RESEARCH = REPO / "examples" / "research"
FILES = tuple(RESEARCH / name for name in ("nodes.yaml", "queues.yaml", "workloads.yaml"))


def dash_f() -> list[str]:
    """The files as ``-f`` options."""
    return [arg for path in FILES for arg in ("-f", str(path))]


def kai(*args: str, width: int = 200) -> str:
    """The command's output (it must succeed) in a terminal ``width`` columns wide."""
    result = CliRunner().invoke(main, list(args), env={"COLUMNS": str(width)})
    assert result.exit_code == 0, result.output
    return result.output


def kai_json(*args: str) -> Any:
    return json.loads(kai(*args, "-o", "json"))


def copy_with(tmp_path: Path, old: str, new: str, name: str = "queues.yaml") -> list[Path]:
    """The files, with ``old`` replaced by ``new`` in the one named ``name``."""
    changed = tmp_path / name
    changed.write_text((RESEARCH / name).read_text().replace(old, new))
    return [changed if path.name == name else path for path in FILES]
