"""The medical task's classifier: an MLP trained on some patients gives p(y|x) on the rest.

:func:`medical_task` splits the breast-cancer patients
(:func:`reprojax.data.rocp.medical_split`), trains
:class:`reprojax.models.mlp_classifier.MLPClassifier` on the training split with
full-batch AdamW (:func:`reprojax.experiments.train.fit_full_batch`) and returns
its probabilities on the held-out pool, which the experiments split into
calibration and test sets. ROCP only needs *some* model p(y|x): it is
calibrated on held-out labels whatever the model's quality.
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import optax

from reprojax.data import rocp as rocp_data
from reprojax.experiments import train
from reprojax.models.mlp_classifier import MLPClassifier


class MedicalTask(NamedTuple):
  probs_NxY: np.ndarray  # classifier p(y|x) on the held-out pool, float32 (N, 2)
  labels_N: np.ndarray  # int32 (N,), 1 = malignant
  train_accuracy: float
  pool_accuracy: float


def fit_classifier(key: jax.Array, x_NxD: jax.Array, y_N: jax.Array, *, num_classes: int,
                   hidden: tuple[int, ...] = (32,), steps: int = 400, learning_rate: float = 1e-2,
                   weight_decay: float = 1e-2):
  """Full-batch AdamW on the mean cross-entropy of an MLP; returns (model, params).

  Raises:
    FloatingPointError: the final training loss is not finite.
  """
  model = MLPClassifier(hidden=tuple(hidden), num_classes=num_classes)
  params = model.init(key, x_NxD[:1])
  opt = optax.adamw(learning_rate, weight_decay=weight_decay)

  def loss_fn(p):
    logits = model.apply(p, x_NxD)
    return optax.softmax_cross_entropy_with_integer_labels(logits, y_N).mean()

  params, losses = jax.jit(lambda p: train.fit_full_batch(loss_fn, opt, p, steps))(params)
  if not np.isfinite(np.asarray(losses[-1])):
    raise FloatingPointError(f"classifier training diverged (final loss {losses[-1]})")
  return model, params


def medical_task(key: jax.Array, n_train: int = 200, manual_dir: str | None = None,
                 hidden: tuple[int, ...] = (32,), steps: int = 400) -> MedicalTask:
  """Trains the classifier on ``n_train`` random patients; p(y|x) on the remaining pool.

  ``key`` is split into the permutation's key and the initialisation's key.
  """
  k_split, k_init = jax.random.split(key)
  split = rocp_data.medical_split(k_split, n_train=n_train, manual_dir=manual_dir)
  xs, y, tr, pool = split
  model, params = fit_classifier(k_init, jnp.asarray(xs[tr]), jnp.asarray(y[tr]), num_classes=2,
                                 hidden=hidden, steps=steps)
  probs = np.asarray(jax.nn.softmax(model.apply(params, jnp.asarray(xs)), axis=-1), np.float32)
  probs = probs / probs.sum(1, keepdims=True)
  acc = lambda idx: float((probs[idx].argmax(1) == y[idx]).mean())
  return MedicalTask(probs[pool], y[pool], acc(tr), acc(pool))
