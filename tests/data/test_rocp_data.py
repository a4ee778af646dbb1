"""Tests of data/rocp.py (breast cancer split, hazard benchmark) and models/mlp_classifier.py."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from reprojax.data import rocp as rocp_data
from reprojax.models.mlp_classifier import MLPClassifier


def test_hazard_benchmark_posterior_is_bayes_and_calibrated():
  d = rocp_data.hazard_benchmark(jax.random.key(0), 3000, temperature=1.0)
  post, probs, y = map(np.asarray, (d.posterior_NxY, d.probs_NxY, d.labels_N))
  np.testing.assert_allclose(probs, post, atol=1e-6)  # temperature 1: the detector is exact
  np.testing.assert_allclose(post.sum(1), 1.0, atol=1e-5)
  # Calibration of the exact posterior: the mean probability of each state equals its frequency.
  freq = np.bincount(y, minlength=8) / len(y)
  np.testing.assert_allclose(post.mean(0), freq, atol=4 * np.sqrt(0.25 / len(y)))
  sharp = rocp_data.hazard_benchmark(jax.random.key(0), 3000, temperature=0.5)
  assert np.asarray(sharp.probs_NxY).max(1).mean() > post.max(1).mean()  # over-confident
  with pytest.raises(ValueError):
    rocp_data.hazard_benchmark(jax.random.key(0), 10, temperature=0.0)


def test_loss_matrices_and_critical_masks():
  for losses, crit, a_n, y_n in ((rocp_data.medical_losses(), rocp_data.medical_critical(), 3, 2),
                                 (rocp_data.hazard_losses(), rocp_data.hazard_critical(), 3, 8)):
    assert set(losses) == {"mild", "severe"} and crit.shape == (a_n, y_n)
    for loss in losses.values():
      assert loss.shape == (a_n, y_n) and np.all(loss >= 0)
    # severe makes the critical mistakes costlier, nothing else cheaper
    assert np.all(losses["severe"][crit] > losses["mild"][crit])
    assert np.all(losses["severe"] >= losses["mild"])


def test_breast_cancer_loader_and_csv_folder(tmp_path):
  x, y = rocp_data.load_breast_cancer()
  assert x.shape == (569, 30) and y.shape == (569,)
  assert int(y.sum()) == 212  # malignant cases
  header = "569,30,malignant,benign"
  np.savetxt(tmp_path / "breast_cancer.csv", np.c_[x, 1 - y], delimiter=",", header=header,
             comments="")
  x2, y2 = rocp_data.load_breast_cancer(str(tmp_path))
  np.testing.assert_allclose(x2, x, rtol=1e-6)
  np.testing.assert_array_equal(y2, y)
  with pytest.raises(FileNotFoundError):
    rocp_data.load_breast_cancer(str(tmp_path / "missing"))


def test_medical_split_is_a_partition_standardised_by_the_training_patients():
  split = rocp_data.medical_split(jax.random.key(0), n_train=200)
  x, y = rocp_data.load_breast_cancer()
  assert len(y) == rocp_data.MEDICAL_PATIENTS
  assert split.train_idx.shape == (200,) and split.pool_idx.shape == (369,)
  np.testing.assert_array_equal(np.sort(np.r_[split.train_idx, split.pool_idx]), np.arange(569))
  np.testing.assert_array_equal(split.labels_N, y)
  tr = split.x_NxD[split.train_idx]
  np.testing.assert_allclose(tr.mean(0), 0.0, atol=1e-4)
  np.testing.assert_allclose(tr.std(0), 1.0, atol=1e-3)  # std + 1e-6 on features ~1e-3
  again = rocp_data.medical_split(jax.random.key(0), n_train=200)
  np.testing.assert_array_equal(again.pool_idx, split.pool_idx)  # a function of the key
  with pytest.raises(ValueError, match="n_train"):
    rocp_data.medical_split(jax.random.key(0), n_train=530)


def test_mlp_classifier_shapes():
  model = MLPClassifier(hidden=(8, 8), num_classes=3)
  params = jax.jit(model.init)(jax.random.key(0), jnp.zeros((1, 5)))  # one compile, not op by op
  logits = jax.jit(model.apply)(params, jnp.ones((4, 5)))
  assert logits.shape == (4, 3) and bool(jnp.all(jnp.isfinite(logits)))
