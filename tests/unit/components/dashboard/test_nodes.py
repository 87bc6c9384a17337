"""The nodes' GPUs as the scheduler counts them: held whole, the held part of each shared GPU, and the pods on each
node without the GPU-sharing reservation pods."""

from pathlib import Path

from dashboard_support import cluster_file

from kai.components.dashboard.nodes import node_columns
from kai.components.insight.inspect import inspect
from kai.components.sim.scenario import load_scenario


def test_whole_and_shared_gpus_per_node(tmp_path: Path) -> None:
    ins = inspect(load_scenario(cluster_file(tmp_path, cycles=2)))  # the second cycle finds the half GPU bound
    assert node_columns(ins.shown) == {
        "names": ["n0"],
        "gpus": [8.0],
        "whole": [2.0],
        "shared": [[0.5]],
        "pods": [2],
        "ready": [True],
    }
