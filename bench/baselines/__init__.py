"""Baselines built here for a comparison, not part of the simulator: the free cable of seed 002
(`free_cable`: the common test case and its elastica reference) and an XPBD cable
(`xpbd_cable`, seed 002 Sec. V-C's comparison).  Imports numpy/scipy/numba only."""
