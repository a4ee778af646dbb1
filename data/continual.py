"""Class-split task streams for continual learning, from images that ship with scikit-learn.

``permuted_digits_stream`` gives every task all ten digits under its own pixel
permutation. ``digits_stream`` cuts scikit-learn's 1,797 handwritten digits (8 x 8) into
``num_tasks`` tasks of ``classes_per_task`` classes each (the "split" benchmark
protocol, as Split-MNIST does with MNIST), with the same number of examples in every
task (each class cut to the rarest class's count, so tasks stack into one array) and
per-task train / validation / test folds. Labels stay global (0..9); ``classes_TxC``
says which classes task t holds. Several seeds give several independent splits,
stacked on a leading axis, for replicas that each draw their own.
"""

from __future__ import annotations

from typing import NamedTuple, Sequence

import numpy as np


class TaskStream(NamedTuple):
  x_train: np.ndarray  # (T, N_train, D) float32
  y_train: np.ndarray  # (T, N_train) int32 global labels
  x_val: np.ndarray  # (T, N_val, D)
  y_val: np.ndarray  # (T, N_val)
  x_test: np.ndarray  # (T, N_test, D)
  y_test: np.ndarray  # (T, N_test)
  classes_TxC: np.ndarray  # (T, C) int32, the classes of each task


def split_by_class(x_NxD: np.ndarray, y_N: np.ndarray, classes_TxC: np.ndarray,
                   fractions: Sequence[float] = (0.6, 0.2, 0.2), seed: int = 0) -> TaskStream:
  """Tasks of the given classes, each class cut to the rarest class's count, then split.

  Every class is shuffled with ``seed`` and cut into train / validation / test by
  ``fractions``; a task's folds are its classes' folds, shuffled together.
  """
  x_NxD, y_N = np.asarray(x_NxD, np.float32), np.asarray(y_N)
  classes_TxC = np.asarray(classes_TxC)
  if x_NxD.ndim != 2 or y_N.shape != (x_NxD.shape[0],):
    raise ValueError(f"x_NxD must be (N, D) and y_N (N,), got {x_NxD.shape} and {y_N.shape}")
  if classes_TxC.ndim != 2 or classes_TxC.size == 0:
    raise ValueError(f"classes_TxC must be a non-empty (T, C) array, got {classes_TxC.shape}")
  if len(np.unique(classes_TxC)) != classes_TxC.size or not np.all(np.isin(classes_TxC, y_N)):
    raise ValueError(f"classes_TxC must name distinct classes present in y_N, got {classes_TxC}")
  f = np.asarray(fractions, np.float64)
  if f.shape != (3,) or np.any(f <= 0) or abs(f.sum() - 1) > 1e-9:
    raise ValueError(f"fractions must be three positive numbers summing to 1, got {fractions}")
  rng = np.random.default_rng(seed)
  per_class = min(int(np.sum(y_N == c)) for c in classes_TxC.ravel())
  cuts = np.round(np.cumsum(f)[:2] * per_class).astype(int)
  folds = [[], [], []]
  for task in classes_TxC:
    parts = [[], [], []]
    for c in task:
      idx = rng.permutation(np.flatnonzero(y_N == c))[:per_class]
      for part, chunk in zip(parts, np.split(idx, cuts)):
        part.append(chunk)
    for fold, part in zip(folds, parts):
      fold.append(rng.permutation(np.concatenate(part)))
  out = []
  for fold in folds:
    idx = np.stack(fold)
    out += [x_NxD[idx], y_N[idx].astype(np.int32)]
  return TaskStream(*out, classes_TxC.astype(np.int32))


def digits_stream(num_tasks: int = 5, classes_per_task: int = 2, seed: int = 0,
                  fractions: Sequence[float] = (0.6, 0.2, 0.2)) -> TaskStream:
  """Split digits: task t holds classes ``t*C .. t*C + C - 1`` (pixels scaled to [0, 1])."""
  if num_tasks < 1 or classes_per_task < 1 or num_tasks * classes_per_task > 10:
    raise ValueError(f"num_tasks * classes_per_task must be in 1..10, got {num_tasks} x "
                     f"{classes_per_task}")
  from sklearn import datasets  # pylint: disable=g-import-not-at-top
  x, y = datasets.load_digits(return_X_y=True)
  classes = np.arange(num_tasks * classes_per_task).reshape(num_tasks, classes_per_task)
  return split_by_class(x / 16.0, y, classes, fractions, seed)


def permuted_digits_stream(num_tasks: int = 5, seed: int = 0,
                           fractions: Sequence[float] = (0.6, 0.2, 0.2)) -> TaskStream:
  """Permuted digits: every task holds all ten digits with its own fixed pixel permutation
  (task 0 the identity), as Permuted-MNIST does; task t's classes are ``10 t .. 10 t + 9``.

  The tasks share no input statistics, so a network that is not protected forgets by
  overwriting the same weights; class-IL must also tell the tasks apart (50 classes).
  """
  if not 1 <= num_tasks <= 20:
    raise ValueError(f"num_tasks must be in 1..20, got {num_tasks}")
  from sklearn import datasets  # pylint: disable=g-import-not-at-top
  x, y = datasets.load_digits(return_X_y=True)
  rng = np.random.default_rng(10_000 + seed)
  perms = [np.arange(x.shape[1])] + [rng.permutation(x.shape[1]) for _ in range(num_tasks - 1)]
  xs = np.concatenate([x[:, p] / 16.0 for p in perms])
  ys = np.concatenate([y + 10 * t for t in range(num_tasks)])
  classes = np.arange(10 * num_tasks).reshape(num_tasks, 10)
  return split_by_class(xs, ys, classes, fractions, seed)


def stack_streams(streams: Sequence[TaskStream]) -> TaskStream:
  """Streams of equal shapes stacked on a new leading (seed) axis."""
  return TaskStream(*(np.stack(parts) for parts in zip(*streams)))
