"""Panels' waves: the change between waves (:mod:`._change`: each wave's moment
estimate, on like cells, the arms pooled; the estimand and the proof of its variance
bound) and its checks by simulation (:mod:`._simulated`)."""

from ._change import WaveChange, pool_wave_changes, wave_change, wave_change_by_cell
from ._simulated import conditional_variance, coverage_grid, simulate_wave_change

__all__ = [
    "WaveChange",
    "conditional_variance",
    "coverage_grid",
    "pool_wave_changes",
    "simulate_wave_change",
    "wave_change",
    "wave_change_by_cell",
]
