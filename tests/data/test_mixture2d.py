"""The 2-D mixture: deterministic in the seed, points near their own centre, bad input."""

import numpy as np
import pytest

from reprojax.data import mixture2d


def test_deterministic_and_labelled_by_mode():
  a, b = mixture2d.sample(2000, 1), mixture2d.sample(2000, 1)
  np.testing.assert_array_equal(a.points_Nx2, b.points_Nx2)
  nearest = np.argmin(((a.points_Nx2[:, None] - a.centres_Mx2[None]) ** 2).sum(-1), 1)
  assert np.mean(nearest == a.labels_N) > 0.99  # std 0.2 against centres 1.5 apart
  np.testing.assert_allclose(np.linalg.norm(a.centres_Mx2, axis=1), 2.0, rtol=1e-6)
  assert set(np.unique(a.labels_N)) == set(range(8))


def test_bad_input():
  with pytest.raises(ValueError, match="num_modes"):
    mixture2d.sample(10, 0, num_modes=0)
  with pytest.raises(ValueError, match="std"):
    mixture2d.sample(10, 0, std=-1.0)
