"""Data generators, PDE solvers and tfds builders of the reprojax suite."""
