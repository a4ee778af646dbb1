"""Data of the ROCP experiments: a real medical diagnosis task and the static hazard-decision benchmark.

* :func:`load_breast_cancer`: the Wisconsin diagnostic breast cancer set (569
  patients, 30 features) that ships inside scikit-learn, or the same CSV from a
  folder. Labels: 0 = benign (mild), 1 = malignant (severe).
* :func:`medical_split`: a random training split of the patients (for the
  classifier that gives p(y|x), trained in ``experiments/rocp/classifier.py``)
  and the held-out pool that the experiments split into calibration and test
  sets, with the features standardised by the training split's statistics.
* :func:`hazard_benchmark`: three binary hazards (pedestrian, vehicle, debris;
  8 label states y = h0 + 2 h1 + 4 h2) drawn with a latent "busy scene"
  variable, a probabilistic detector that sees one noisy Gaussian score per
  hazard, the exact Bayes posterior, and the detector's reported probabilities
  (the posterior sharpened by a temperature, an over-confident detector).
* :func:`radiograph_benchmark`: a synthetic 4-class stand-in for the paper's COVID
  chest-radiograph task (labels in the authors' order normal / pneumonia / COVID-19 /
  lung opacity, class shares of the COVID-19 Radiography Database), Gaussian features,
  the exact posterior and an over-confident detector, as the hazard benchmark.
* Loss matrices (actions x labels), mild and severe, the paper's COVID matrices
  (Lambda0, Lambda1) and its driving matrix (4 actions, collision cost 60), and
  critical-mistake masks.

The paper's experiments use a COVID chest-image task and a driving-scene hazard
benchmark; neither is reachable offline, so these are our stand-ins (see the
experiment README).

References:
  Wolberg, Street & Mangasarian, "Breast Cancer Wisconsin (Diagnostic)", UCI (1995);
  Wang & Dobriban (ICML 2026), Section 6.
"""

from __future__ import annotations

import functools
import os
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

MEDICAL_LABELS = ("benign", "malignant")
MEDICAL_ACTIONS = ("discharge", "follow-up", "treat")
HAZARDS = ("pedestrian", "vehicle", "debris")
HAZARD_ACTIONS = ("proceed", "slow", "stop")
MEDICAL_PATIENTS = 569  # patients of the Wisconsin diagnostic breast cancer set


# --------------------------------------------------------------------------- medical


def load_breast_cancer(manual_dir: str | None = None) -> tuple[np.ndarray, np.ndarray]:
  """Features float32 (569, 30) and labels int32 (569,), 1 = malignant (N = MEDICAL_PATIENTS).

  Args:
    manual_dir: folder holding ``breast_cancer.csv`` in scikit-learn's format (a
      header line ``569,30,malignant,benign``, then 30 features and the target,
      0 = malignant); None reads the copy inside scikit-learn.
  """
  if manual_dir is None:
    try:
      from sklearn import datasets  # pylint: disable=g-import-not-at-top
    except ImportError as e:
      raise FileNotFoundError("the breast cancer data ship with scikit-learn: pip install "
                              "scikit-learn, or pass a folder holding breast_cancer.csv") from e
    bunch = datasets.load_breast_cancer()
    x, target = bunch.data, bunch.target
  else:
    path = os.path.join(os.path.expanduser(manual_dir), "breast_cancer.csv")
    if not os.path.isfile(path):
      raise FileNotFoundError(f"{path} not found; copy it from scikit-learn's "
                              "sklearn/datasets/data/breast_cancer.csv")
    raw = np.loadtxt(path, delimiter=",", skiprows=1)
    x, target = raw[:, :-1], raw[:, -1]
  return x.astype(np.float32), (1 - target).astype(np.int32)


class MedicalSplit(NamedTuple):
  """The patients split for the classifier: training indices and the held-out pool."""

  x_NxD: np.ndarray  # every patient's features, standardised by the training split, float32
  labels_N: np.ndarray  # int32 (N,), 1 = malignant
  train_idx: np.ndarray  # int (n_train,): patients that train the classifier
  pool_idx: np.ndarray  # int (N - n_train,): held out, split into calibration and test sets


def medical_split(key: jax.Array, n_train: int = 200,
                  manual_dir: str | None = None) -> MedicalSplit:
  """A random permutation of the patients (from ``key``): the first ``n_train`` train.

  Features are standardised with the training patients' mean and standard
  deviation (+1e-6), so nothing of the held-out pool leaks into the classifier.

  Args:
    key: PRNG key of the permutation.
    n_train: training patients, in [10, N - 50] (N = 569).
    manual_dir: folder of ``breast_cancer.csv`` (None: the copy inside scikit-learn).
  """
  x, y = load_breast_cancer(manual_dir)
  if not 10 <= n_train <= len(y) - 50:
    raise ValueError(f"n_train must be in [10, {len(y) - 50}], got {n_train}")
  perm = np.asarray(jax.random.permutation(key, len(y)))
  tr, pool = perm[:n_train], perm[n_train:]
  mean, std = x[tr].mean(0), x[tr].std(0) + 1e-6
  return MedicalSplit((x - mean) / std, y, tr, pool)


def medical_losses() -> dict[str, np.ndarray]:
  """Loss (actions discharge/follow-up/treat x labels benign/malignant), mild and severe.

  Missing a malignant tumour (discharge) costs 5 (mild) or 50 (severe); a
  follow-up costs 1 on a benign and 2 / 4 on a malignant case (delay);
  treating a benign case costs 3 (over-treatment), a malignant one 0.5.
  """
  mild = np.array([[0.0, 5.0], [1.0, 2.0], [3.0, 0.5]], np.float32)
  severe = np.array([[0.0, 50.0], [1.0, 4.0], [3.0, 0.5]], np.float32)
  return {"mild": mild, "severe": severe}


def medical_critical() -> np.ndarray:
  """Critical mistake: discharging a malignant case. bool (3, 2)."""
  c = np.zeros((3, 2), bool)
  c[0, 1] = True
  return c


# --------------------------------------------------------------------------- hazards


def hazard_states() -> np.ndarray:
  """The 8 label states as hazard indicators, int (8, 3); y = h0 + 2 h1 + 4 h2."""
  return np.array([[(y >> j) & 1 for j in range(3)] for y in range(8)], np.int32)


class HazardData(NamedTuple):
  probs_NxY: jax.Array  # detector's reported p(y|x), float32 (N, 8)
  posterior_NxY: jax.Array  # exact Bayes posterior, float32 (N, 8)
  labels_N: jax.Array  # int32 (N,)


def hazard_benchmark(key: jax.Array, n: int, temperature: float = 0.7,
                     signal: tuple[float, float, float] = (1.2, 1.0, 0.8)) -> HazardData:
  """Samples n scenes and the detector's outputs (pure function of ``key``).

  A latent busy-scene flag z ~ Bernoulli(0.3) makes hazards co-occur:
  P(h_j = 1 | z) = (0.05, 0.10, 0.05) if z = 0 and (0.40, 0.50, 0.30) if z = 1.
  The detector sees s_j = mu_j (2 h_j - 1) + N(0, 1); the posterior over the 8
  states is exact, and the detector reports softmax(log posterior / temperature).
  """
  if n < 1:
    raise ValueError(f"n must be >= 1, got {n}")
  if not temperature > 0:
    raise ValueError(f"temperature must be > 0, got {temperature}")
  return _hazard_sample(key, jnp.asarray(temperature, jnp.float32),
                        jnp.asarray(signal, jnp.float32), n)


@functools.partial(jax.jit, static_argnames="n")
def _hazard_sample(key, temperature, signal_J, n):
  """Jitted core of :func:`hazard_benchmark` (one compile instead of op-by-op dispatch)."""
  states = jnp.asarray(hazard_states(), jnp.float32)  # (8, 3)
  pz = jnp.array([0.7, 0.3])
  ph = jnp.array([[0.05, 0.10, 0.05], [0.40, 0.50, 0.30]])  # (z, j)
  prior_zY = jnp.prod(jnp.where(states[None] > 0, ph[:, None], 1 - ph[:, None]), -1)  # (2, 8)
  prior_Y = pz @ prior_zY
  k_y, k_s = jax.random.split(key)
  labels = jax.random.categorical(k_y, jnp.log(prior_Y), shape=(n,))
  mu = signal_J
  means_YxJ = mu * (2 * states - 1)
  scores = means_YxJ[labels] + jax.random.normal(k_s, (n, 3))
  loglik = -0.5 * ((scores[:, None, :] - means_YxJ[None]) ** 2).sum(-1)
  logpost = jnp.log(prior_Y)[None] + loglik
  post = jax.nn.softmax(logpost, axis=-1)
  probs = jax.nn.softmax(logpost / temperature, axis=-1)
  return HazardData(probs, post, labels.astype(jnp.int32))


def hazard_losses() -> dict[str, np.ndarray]:
  """Loss (actions proceed/slow/stop x 8 states), mild (collision 6) and severe (collision 40).

  With severity sev(y) = max_j s_j h_j, s = (1.0, 0.6, 0.3) for (pedestrian,
  vehicle, debris): proceed costs c * sev(y), slowing costs 1 + 0.15 c sev(y),
  stopping costs 2.5 whatever the scene.
  """
  sev = (hazard_states() * np.array([1.0, 0.6, 0.3])).max(1)
  out = {}
  for name, c in (("mild", 6.0), ("severe", 40.0)):
    out[name] = np.stack([c * sev, 1.0 + 0.15 * c * sev, np.full(8, 2.5)]).astype(np.float32)
  return out


def driving_loss() -> np.ndarray:
  """The paper's driving loss (actions keep/left/right/stop x 8 states), collision cost 60.

  The scene's three indicators are read as (right, left, ahead) = (h0, h1, h2), so
  y = h0 + 2 h1 + 4 h2 is the authors' index 4 ahead + 2 left + right. Keeping the
  lane costs 60 if the way ahead is blocked; turning costs 60 into a blocked side,
  plus 3, plus 2 when the way ahead was free (an unneeded turn); stopping costs 2
  when blocked ahead and 6 when free. float32 (4, 8).
  """
  right, left, ahead = hazard_states().T.astype(np.float32)
  keep = 60.0 * ahead
  turn_extra = 3.0 + 2.0 * (1.0 - ahead)
  stop = np.where(ahead > 0, 2.0, 6.0)
  return np.stack([keep, 60.0 * left + turn_extra, 60.0 * right + turn_extra, stop]).astype(
      np.float32)


def driving_critical() -> np.ndarray:
  """The paper's driving critical mistake: any action with loss >= 60 (a collision). bool (4, 8)."""
  return driving_loss() >= 60.0


def hazard_critical() -> np.ndarray:
  """Critical mistake: proceeding into any hazard (a collision). bool (3, 8)."""
  c = np.zeros((3, 8), bool)
  c[0, 1:] = True
  return c



# --------------------------------------------------------------------------- radiographs


RADIOGRAPH_LABELS = ("normal", "pneumonia", "covid19", "lung_opacity")  # the authors' order
RADIOGRAPH_ACTIONS = ("no_action", "antibiotics", "quarantine", "additional_testing")
# Images per class in the COVID-19 Radiography Database (Chowdhury et al. 2020; Rahman et
# al. 2021): normal 10,192, viral pneumonia 1,345, COVID-19 3,616, lung opacity 6,012.
RADIOGRAPH_COUNTS = (10192, 1345, 3616, 6012)


def radiograph_benchmark(key: jax.Array, n: int, temperature: float = 0.7,
                         separation: float = 2.5) -> HazardData:
  """n synthetic radiograph cases and a 4-class detector's outputs (pure function of ``key``).

  Labels from the database's class shares; features x = separation e_y + N(0, I_4); the
  exact posterior over the 4 classes, and the detector reports
  softmax(log posterior / temperature) (over-confident for temperature < 1). A stand-in
  for the paper's cached COVID probabilities, which are not public.
  """
  if n < 1:
    raise ValueError(f"n must be >= 1, got {n}")
  if not temperature > 0 or not separation > 0:
    raise ValueError(f"temperature and separation must be > 0, got {temperature}, {separation}")
  return _radiograph_sample(key, jnp.asarray(temperature, jnp.float32),
                            jnp.asarray(separation, jnp.float32), n)


@functools.partial(jax.jit, static_argnames="n")
def _radiograph_sample(key, temperature, separation, n):
  prior = jnp.asarray(RADIOGRAPH_COUNTS, jnp.float32)
  prior = prior / prior.sum()
  k_y, k_x = jax.random.split(key)
  labels = jax.random.categorical(k_y, jnp.log(prior), shape=(n,))
  means = separation * jnp.eye(4)
  x = means[labels] + jax.random.normal(k_x, (n, 4))
  logpost = jnp.log(prior)[None] - 0.5 * ((x[:, None, :] - means[None]) ** 2).sum(-1)
  return HazardData(jax.nn.softmax(logpost / temperature, axis=-1),
                    jax.nn.softmax(logpost, axis=-1), labels.astype(jnp.int32))


def radiograph_losses() -> dict[str, np.ndarray]:
  """The paper's COVID losses (actions x labels): Lambda0, and Lambda1 (x10 on every wrong
  action for a sick label except additional testing). float32 (4, 4) each."""
  lambda0 = np.array([[0, 8, 8, 6], [10, 0, 7, 3], [10, 7, 0, 2], [9, 6, 6, 0]], np.float32)
  lambda1 = lambda0.copy()
  lambda1[1:, :3] *= 10.0
  return {"lambda0": lambda0.T.copy(), "lambda1": lambda1.T.copy()}


def radiograph_critical(loss_AxY: np.ndarray) -> np.ndarray:
  """The paper's COVID critical mistake: a sick label's worst action (no action). bool (4, 4)."""
  c = np.zeros(loss_AxY.shape, bool)
  for y in range(1, loss_AxY.shape[1]):
    c[np.argmax(loss_AxY[:, y]), y] = True
  return c
