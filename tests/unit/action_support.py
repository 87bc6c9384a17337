"""Running one action of a cycle on a small cluster, for the actions' own tests."""

from typing import Any

from core_builders import T0, cluster

from kai.core.config import parse_config
from kai.core.cycle import run_cycle
from kai.core.framework.decisions import CycleResult
from kai.core.state.snapshot import take_snapshot


def run_action(action: str, *objects: tuple[str, dict[str, Any]], now: float = T0, **config: Any) -> CycleResult:
    """One cycle of KAI's default plugins running only ``action``."""
    settings = parse_config({"actions": action, **config})
    return run_cycle(take_snapshot(cluster(*objects), settings.scheduler_name, now), settings, now).result
