"""Proportion plugin: hierarchical fair share, queue order, quota checks and reclaim rules."""
