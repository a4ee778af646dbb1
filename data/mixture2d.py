"""A labelled 2-D Gaussian mixture: the low-dimensional data of the flow-model papers.

``num_modes`` isotropic Gaussians (standard deviation ``std``) with centres evenly on a
circle of ``radius``; a point's label is its mode. Deterministic in ``seed``.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np


class Mixture(NamedTuple):
  points_Nx2: np.ndarray  # float32
  labels_N: np.ndarray  # int32, the mode of each point
  centres_Mx2: np.ndarray  # float32


def centres(num_modes: int, radius: float = 2.0) -> np.ndarray:
  angle = 2 * np.pi * np.arange(num_modes) / num_modes
  return (radius * np.stack([np.cos(angle), np.sin(angle)], 1)).astype(np.float32)


def sample(num: int, seed: int, num_modes: int = 8, radius: float = 2.0, std: float = 0.2
           ) -> Mixture:
  for name, v in (("num", num), ("num_modes", num_modes)):
    if not isinstance(v, (int, np.integer)) or isinstance(v, bool) or v < 1:
      raise ValueError(f"{name} must be a positive int, got {v!r}")
  if not (radius > 0 and std > 0 and np.isfinite(radius) and np.isfinite(std)):
    raise ValueError(f"radius and std must be finite and > 0, got {radius!r} and {std!r}")
  rng = np.random.default_rng([seed, 3])
  c = centres(num_modes, radius)
  labels = rng.integers(0, num_modes, num).astype(np.int32)
  points = c[labels] + std * rng.normal(size=(num, 2))
  return Mixture(points.astype(np.float32), labels, c)
