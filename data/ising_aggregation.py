"""Data of the ``ising_aggregation`` paper: simulated dependent judges, semi-real judges, real crowd labels.

* :func:`sample_ising_judges`: exact samples of a class-dependent (or, with
  W0 == W1, class-independent) Ising model of K <= 20 judges, and the labels.
* :func:`dependent_panel`: the parameters of a panel with a correlated clique of
  judges (the simulated benchmark of the experiment).
* :func:`sample_latent_factor`: the one-factor logistic-normal model.
* :func:`curie_weiss_pmf` / :func:`sample_curie_weiss`: the Curie-Weiss model
  P(J | y) propto exp(h_y S + theta_y S^2 / (2K)), S = sum_k J_k, exactly for any K.
* :func:`semi_real_judges`: K scikit-learn classifiers trained on the digits
  data shipped with scikit-learn (no download), sharing training folds and
  features so that their errors correlate; the test labels are known.
* :func:`load_crowd_binary`: the real crowd labels ``crowd_binary/jn_product``
  (CrowdER product matching, 8,315 items, 176 workers) from a manual folder.
"""

from __future__ import annotations

import csv
import functools
import os
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from scipy import special

from reprojax.algorithms import ising_aggregation as ia
from reprojax.data import paths


class Judged(NamedTuple):
  votes_NxK: jax.Array  # int32 in {-1, 0, 1}
  labels_N: jax.Array  # int32 in {0, 1}


@functools.partial(jax.jit, static_argnames=("num_items",))
def _sample_ising(key, h0_K, h1_K, W0_KxK, W1_KxK, prior, num_items):
  ky, k0, k1 = jax.random.split(key, 3)
  y = jax.random.bernoulli(ky, prior, (num_items,))
  j0 = ia.ising_sample(k0, h0_K, W0_KxK, num_items)
  j1 = ia.ising_sample(k1, h1_K, W1_KxK, num_items)
  return Judged(jnp.where(y[:, None], j1, j0), y.astype(jnp.int32))


def sample_ising_judges(key: jax.Array, num_items: int, h0_K, h1_K, W0_KxK, W1_KxK,
                        prior) -> Judged:
  """Y ~ Bernoulli(prior), J | Y=y ~ Ising(h^(y), W^(y)) exactly (K <= 20). vmap over keys/params."""
  return _sample_ising(key, h0_K, h1_K, W0_KxK, W1_KxK, prior, num_items=int(num_items))


def dependent_panel(key: jax.Array, num_judges: int, clique_frac: float = 0.6,
                    class_dependent: bool = True, strength: float = 1.0):
  """A panel of K judges whose majority is a clique of correlated, mediocre judges.

  Clique judges (the first ceil(clique_frac K)) have fields giving accuracy
  about 0.65-0.75 alone and positive couplings inside the clique, stronger
  under Y=0 than under Y=1 when ``class_dependent`` (they share failure modes
  on negatives: a shared false-positive mode); the others are independent and
  more accurate (about 0.75-0.85). Random per key. ``strength`` multiplies the
  clique couplings (1: total coupling per judge 3-4 under Y=0, below the
  Curie-Weiss critical value 4; 2: 6-8, above it, so the clique votes as a bloc).
  With ``class_dependent=False`` both classes share the Y=0 couplings (a failure
  mode shared across classes: the class-independent Ising model is then exact).

  Returns:
    (h0_K, h1_K, W0_KxK, W1_KxK, prior).
  """
  k = num_judges
  kc, kw0, kw1, ki, kp = jax.random.split(key, 5)
  m = int(np.ceil(clique_frac * k))
  in_clique = jnp.arange(k) < m
  pair = (in_clique[:, None] & in_clique[None, :]) & ~jnp.eye(k, dtype=bool)
  # per-class coupling strength inside the clique, scaled by 1/(m-1) (Curie-Weiss scaling)
  s = 1.0 / max(m - 1, 1)
  w0 = jax.random.uniform(kw0, (), minval=3.0, maxval=4.0) * s * strength
  w1 = (jax.random.uniform(kw1, (), minval=0.5, maxval=1.5) * s * strength if class_dependent
        else w0)
  W0 = jnp.where(pair, w0, 0.0)
  W1 = jnp.where(pair, w1, 0.0)
  acc_ind = jax.random.uniform(ki, (k,), minval=0.75, maxval=0.85)
  acc_cl = jax.random.uniform(kc, (k,), minval=0.6, maxval=0.7)
  lo = jnp.where(in_clique, jax.scipy.special.logit(acc_cl), jax.scipy.special.logit(acc_ind))
  # fields: the clique's couplings push votes up; centre them so that half the clique
  # field is offset by the expected coupling input
  h1 = lo - jnp.where(in_clique, w1 * (m - 1) * 0.5, 0.0)
  h0 = -lo - jnp.where(in_clique, w0 * (m - 1) * 0.5, 0.0)
  prior = jax.random.uniform(kp, (), minval=0.35, maxval=0.65)
  return h0, h1, W0, W1, prior


def bloc_panel(key: jax.Array, num_judges: int, bloc_frac: float = 0.6,
               bloc_acc: tuple[float, float] = (0.75, 0.85),
               ind_acc: tuple[float, float] = (0.75, 0.85),
               coupling: tuple[float, float] = (6.0, 8.0), class_dependent: bool = False):
  """A panel whose majority is a bloc of judges sharing one failure mode (regime B).

  The first m = ceil(bloc_frac K) judges are coupled with W_kl = theta / (m - 1),
  theta ~ U(coupling) above the Curie-Weiss critical value 4, so the bloc votes
  (nearly) as one; their fields h^(y)_k = -theta/2 +- logit(a)/m make the bloc's
  all-correct state a/(1-a) times as likely as its all-wrong state, i.e. the bloc
  as a whole is right with probability about a ~ U(bloc_acc) (mediocre), while
  each of the other judges is independent with accuracy ~ U(ind_acc). A
  conditional-independence rule counts the bloc's m agreeing votes as m pieces
  of evidence and follows it; the Bayes rule counts it about once. Couplings are
  shared by both classes unless ``class_dependent`` (then the Y=1 coupling is
  theta/2). The defaults put the Bayes rule about 9-10 points above two-coin
  Dawid-Skene at K = 8 (chosen from the oracle and DS accuracies alone, to match
  the gap between the paper's Ising and CI weighted vote on its relevance task).

  Returns:
    (h0_K, h1_K, W0_KxK, W1_KxK, prior).
  """
  k = num_judges
  kb, kt, ki, kp = jax.random.split(key, 4)
  m = int(np.ceil(bloc_frac * k))
  in_bloc = jnp.arange(k) < m
  pair = (in_bloc[:, None] & in_bloc[None, :]) & ~jnp.eye(k, dtype=bool)
  theta0 = jax.random.uniform(kt, (), minval=coupling[0], maxval=coupling[1])
  theta1 = 0.5 * theta0 if class_dependent else theta0
  a = jax.random.uniform(kb, (), minval=bloc_acc[0], maxval=bloc_acc[1])
  acc_ind = jax.random.uniform(ki, (k,), minval=ind_acc[0], maxval=ind_acc[1])
  lo_ind = jax.scipy.special.logit(acc_ind)
  lo_bloc = jax.scipy.special.logit(a) / m
  s = 1.0 / max(m - 1, 1)
  W0 = jnp.where(pair, theta0 * s, 0.0)
  W1 = jnp.where(pair, theta1 * s, 0.0)
  h1 = jnp.where(in_bloc, lo_bloc - 0.5 * theta1, lo_ind)
  h0 = jnp.where(in_bloc, -lo_bloc - 0.5 * theta0, -lo_ind)
  prior = jax.random.uniform(kp, (), minval=0.35, maxval=0.65)
  return h0, h1, W0, W1, prior


@functools.partial(jax.jit, static_argnames=("num_items",))
def sample_latent_factor(key: jax.Array, num_items: int, a0_K, a1_K, lam_K, prior) -> Judged:
  """Y ~ Bernoulli(pi), Z ~ N(0, 1), J_k | Y=y, Z=z ~ Bernoulli(sigmoid(a^(y)_k + lambda_k z))."""
  ky, kz, kj = jax.random.split(key, 3)
  y = jax.random.bernoulli(ky, prior, (num_items,))
  z = jax.random.normal(kz, (num_items,))
  a = jnp.where(y[:, None], a1_K[None], a0_K[None])
  j = jax.random.bernoulli(kj, jax.nn.sigmoid(a + lam_K[None] * z[:, None]))
  return Judged(j.astype(jnp.int32), y.astype(jnp.int32))


def curie_weiss_log_pmf(num_judges: int, h: float, theta: float) -> np.ndarray:
  """log P(S = s), s = 0..K, for P(J) propto exp(h S + theta S^2 / (2K)) on {0,1}^K (float64)."""
  k = num_judges
  s = np.arange(k + 1, dtype=np.float64)
  logw = special.gammaln(k + 1) - special.gammaln(s + 1) - special.gammaln(k - s + 1)
  logw = logw + h * s + theta * s * s / (2.0 * k)
  return logw - special.logsumexp(logw)


def curie_weiss_log_prob_votes(num_judges: int, h: float, theta: float) -> np.ndarray:
  """log P(J) of one vote vector with S = s ones, s = 0..K (exchangeable: depends on S only)."""
  k = num_judges
  s = np.arange(k + 1, dtype=np.float64)
  logc = special.gammaln(k + 1) - special.gammaln(s + 1) - special.gammaln(k - s + 1)
  return curie_weiss_log_pmf(k, h, theta) - logc


def sample_curie_weiss(key: jax.Array, num_items: int, num_judges: int, h0: float, h1: float,
                       theta0: float, theta1: float, prior: float) -> Judged:
  """Exact samples: S ~ P(S | y) from :func:`curie_weiss_log_pmf`, then a uniform arrangement of the S ones."""
  k = num_judges
  l0 = jnp.asarray(curie_weiss_log_pmf(k, h0, theta0), jnp.float32)
  l1 = jnp.asarray(curie_weiss_log_pmf(k, h1, theta1), jnp.float32)
  ky, ks, kp = jax.random.split(key, 3)
  y = jax.random.bernoulli(ky, prior, (num_items,))
  s = jnp.where(y, jax.random.categorical(ks, l1, shape=(num_items,)),
                jax.random.categorical(jax.random.fold_in(ks, 1), l0, shape=(num_items,)))
  ranks = jnp.argsort(jnp.argsort(jax.random.uniform(kp, (num_items, k)), axis=1), axis=1)
  return Judged((ranks < s[:, None]).astype(jnp.int32), y.astype(jnp.int32))


class SemiReal(NamedTuple):
  votes_NxK: np.ndarray  # int32 in {0, 1}
  labels_N: np.ndarray  # int32 in {0, 1}
  family_K: np.ndarray  # int32 family of each judge (judges of a family share fold and pixels)


def semi_real_judges(seed: int, num_judges: int, *, num_families: int = 2, train_size: int = 80,
                     feature_frac: float = 0.25, family_overlap: float = 0.8) -> SemiReal:
  """K scikit-learn classifiers as judges on the digits data (label: digit >= 5), errors correlated.

  Judges come in ``num_families`` families; a family shares one small training
  fold (``train_size`` items) and a core of pixels (``family_overlap`` of each
  judge's features), so its members make correlated mistakes; family 0 holds
  about half of the judges. Model types cycle through logistic regression,
  Gaussian naive Bayes and a depth-4 tree. The items are the digits not used
  for any training fold, their labels known.

  Args:
    seed: integer seed (numpy Generator; scikit-learn runs on the CPU).
    num_judges: K.

  Returns:
    SemiReal(votes_NxK, labels_N, family_K) with no missing votes.
  """
  from sklearn import datasets  # pylint: disable=g-import-not-at-top
  from sklearn import linear_model, naive_bayes, tree

  x, digit = datasets.load_digits(return_X_y=True)
  y = (digit >= 5).astype(np.int32)
  rng = np.random.default_rng(seed)
  n, d = x.shape
  perm = rng.permutation(n)
  folds = [perm[i * train_size:(i + 1) * train_size] for i in range(num_families)]
  test = perm[num_families * train_size:]
  sizes = [int(np.ceil(num_judges / 2))]
  rest = num_judges - sizes[0]
  for f in range(1, num_families):
    sizes.append(rest // (num_families - 1) + (1 if f - 1 < rest % (num_families - 1) else 0))
  nf = max(2, int(feature_frac * d))
  votes, family = [], []
  j = 0
  for f, size in enumerate(sizes):
    core = rng.choice(d, size=int(family_overlap * nf), replace=False)
    for _ in range(size):
      extra = rng.choice(np.setdiff1d(np.arange(d), core), size=nf - core.size, replace=False)
      feats = np.concatenate([core, extra])
      kind = j % 3
      if kind == 0:
        model = linear_model.LogisticRegression(C=0.05, max_iter=500)
      elif kind == 1:
        model = naive_bayes.GaussianNB()
      else:
        model = tree.DecisionTreeClassifier(max_depth=4, random_state=int(rng.integers(1 << 31)))
      model.fit(x[folds[f]][:, feats], y[folds[f]])
      votes.append(model.predict(x[test][:, feats]).astype(np.int32))
      family.append(f)
      j += 1
  return SemiReal(np.stack(votes, axis=1), y[test], np.asarray(family, np.int32))


class CrowdData(NamedTuple):
  votes_NxK: np.ndarray  # int32, -1 where the worker did not label the item
  labels_N: np.ndarray  # int32 ground truth
  items: tuple  # item ids, in row order
  workers: tuple  # worker ids, in column order


CROWD_NAME = "crowd_binary/jn_product"


def load_crowd_binary(manual_dir: str | None = None, name: str = CROWD_NAME) -> CrowdData:
  """Reads a binary crowdsourcing set in the Zheng et al. (2017) layout: answer.csv and truth.csv.

  ``answer.csv`` has columns question, worker, answer (0/1); ``truth.csv`` has
  question, truth. Items without a truth are dropped; a worker who answered
  the same item twice keeps the last answer.

  Args:
    manual_dir: the dataset's folder; default ``$REPROJAX_MANUAL_DIR/<name>``.
    name: the dataset under the manual root.

  Returns:
    CrowdData(votes_NxK, labels_N, items, workers).

  References:
    Wang et al., "CrowdER" (PVLDB 2012); Zheng et al., "Truth inference in
    crowdsourcing: is the problem solved?" (PVLDB 2017).
  """
  folder = paths.manual_dir(
      name, manual_dir, required=("answer.csv", "truth.csv"),
      how_to_get="Copy answer.csv and truth.csv of the Zheng et al. (2017) benchmark "
                 "(d_jn_product) into that folder.")
  with open(os.path.join(folder, "truth.csv"), newline="") as f:
    truth = {r["question"]: int(r["truth"]) for r in csv.DictReader(f)}
  with open(os.path.join(folder, "answer.csv"), newline="") as f:
    answers = [(r["question"], r["worker"], int(r["answer"])) for r in csv.DictReader(f)]
  items = tuple(sorted(truth))
  workers = tuple(sorted({w for _, w, _ in answers}))
  ii = {q: i for i, q in enumerate(items)}
  wi = {w: i for i, w in enumerate(workers)}
  votes = -np.ones((len(items), len(workers)), np.int32)
  for q, w, a in answers:
    if q in ii:
      if a not in (0, 1):
        raise ValueError(f"{name}: answer {a} for item {q} is not binary")
      votes[ii[q], wi[w]] = a
  keep = (votes >= 0).any(axis=1)
  items = tuple(q for q, k in zip(items, keep) if k)
  labels = np.array([truth[q] for q in items], np.int32)
  return CrowdData(votes[keep], labels, items, workers)
