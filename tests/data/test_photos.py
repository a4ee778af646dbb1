"""data.photos: grey patches of scikit-learn's two photographs, train and held-out apart."""

import numpy as np
import pytest

from reprojax.data import photos


def test_patches_are_grey_crops_of_disjoint_columns():
  imgs = photos.photos(downsample=2)
  assert [g.shape for g in imgs] == [(213, 320), (213, 320)]
  p = photos.patches(16, 10, 6, seed=3)
  assert p.train.shape == (10, 16, 16, 1) and p.eval.shape == (6, 16, 16, 1)
  assert p.train.dtype == np.float32 and 0.0 <= p.train.min() and p.train.max() <= 1.0
  # every patch is a crop of one photo: training crops left of the split, held-out right
  for patch_set, side in ((p.train, "left"), (p.eval, "right")):
    for x in patch_set[..., 0]:
      hits = []
      for g in imgs:
        win = np.lib.stride_tricks.sliding_window_view(g, (16, 16))
        ys, xs = np.nonzero(np.all(win == x, axis=(2, 3)))
        hits += list(xs)
      assert hits, "a patch that is no crop of either photo"
      cut = 240  # 320 columns, the right quarter held out
      assert all(c + 16 <= cut for c in hits) if side == "left" else all(c >= cut for c in hits)
  np.testing.assert_array_equal(photos.patches(16, 10, 6, seed=3).train, p.train)
  assert not np.array_equal(photos.patches(16, 10, 6, seed=4).train, p.train)


def test_bad_input():
  with pytest.raises(ValueError, match="size"):
    photos.patches(0, 4, 4)
  with pytest.raises(ValueError, match="does not fit"):
    photos.patches(100, 4, 4)
  with pytest.raises(ValueError, match="eval_fraction"):
    photos.patches(8, 4, 4, eval_fraction=1.0)
