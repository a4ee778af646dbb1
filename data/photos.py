"""Grey patches of natural photographs: the two that ship inside scikit-learn.

``sklearn.datasets.load_sample_images`` holds two 427 x 640 colour photographs (a temple,
``china.jpg``, and a flower, ``flower.jpg``; files in the installed package, nothing
fetched). :func:`patches` turns them into ``size`` x ``size`` grey patches in [0, 1]:
luminance (ITU-R BT.601 weights), each photo downsampled ``downsample`` times by block
means (so a patch holds more than a few pixels of texture), then square crops at seeded
random positions. The training crops come from the left ``1 - eval_fraction`` of every
photo and the held-out crops from the right part, so no held-out pixel was seen in training.

Unlike scikit-learn's digits (mostly black background), such patches have mid-grey levels
and texture everywhere, as the natural images of watermarking papers do: an additive
watermark is not clipped away on a saturated background.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

_LUMA = np.array([0.299, 0.587, 0.114], np.float32)


class Patches(NamedTuple):
  train: np.ndarray  # (num_train, size, size, 1) float32 in [0, 1]
  eval: np.ndarray  # (num_eval, size, size, 1) float32 in [0, 1]


def photos(downsample: int = 2) -> list[np.ndarray]:
  """The two photographs as grey images in [0, 1], block-mean downsampled."""
  from sklearn import datasets  # pylint: disable=g-import-not-at-top
  out = []
  for im in datasets.load_sample_images().images:
    g = (im.astype(np.float32) @ _LUMA) / 255.0
    h, w = g.shape[0] // downsample, g.shape[1] // downsample
    out.append(g[:h * downsample, :w * downsample]
               .reshape(h, downsample, w, downsample).mean(axis=(1, 3)))
  return out


def patches(size: int, num_train: int, num_eval: int, seed: int = 0, downsample: int = 2,
            eval_fraction: float = 0.25) -> Patches:
  """``num_train`` and ``num_eval`` patches, split evenly over the two photos (see above)."""
  for name, v in (("size", size), ("num_train", num_train), ("num_eval", num_eval),
                  ("downsample", downsample)):
    if not isinstance(v, (int, np.integer)) or isinstance(v, bool) or v < 1:
      raise ValueError(f"{name} must be a positive int, got {v!r}")
  if not 0.0 < eval_fraction < 1.0:
    raise ValueError(f"eval_fraction must lie in (0, 1), got {eval_fraction}")
  images = photos(downsample)
  rng = np.random.default_rng([seed, 11])
  train, held = [], []
  for i, g in enumerate(images):
    h, w = g.shape
    cut = int(round(w * (1.0 - eval_fraction)))
    if min(h, cut, w - cut) < size:
      raise ValueError(f"size={size} does not fit the photos ({h} x {w} after "
                       f"downsample={downsample}, split at column {cut})")
    for n, lo, hi, out in ((num_train, 0, cut, train), (num_eval, cut, w, held)):
      k = n // len(images) + (1 if i < n % len(images) else 0)
      ys = rng.integers(0, h - size + 1, k)
      xs = rng.integers(lo, hi - size + 1, k)
      out.extend(g[y:y + size, x:x + size] for y, x in zip(ys, xs))
  return Patches(np.stack(train)[..., None].astype(np.float32),
                 np.stack(held)[..., None].astype(np.float32))
