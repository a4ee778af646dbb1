"""CausalDPO's losses, clustering and ranking metrics against independent references.

References: a numpy transcription of TRL's sigmoid DPO loss (``DPOTrainer.dpo_loss``,
``loss_type="sigmoid"``), a hand-computed value, central finite differences,
scikit-learn's ``KMeans`` and ``adjusted_rand_score``, and plain-Python loops.
"""

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from sklearn.cluster import KMeans
from sklearn.metrics import adjusted_rand_score

from reprojax.algorithms import causal_dpo


def _logps(seed, b=7, k=None):
  rng = np.random.default_rng(seed)
  shape = (b,) if k is None else (b, k)
  return (-rng.gamma(2.0, 1.0, b), -rng.gamma(2.0, 1.0, shape), -rng.gamma(2.0, 1.0, b),
          -rng.gamma(2.0, 1.0, shape))


def _trl_sigmoid(pc, pr, rc, rr, beta, label_smoothing=0.0):
  """TRL's sigmoid DPO loss, transcribed to numpy (float64)."""
  logits = (pc - pr) - (rc - rr)
  logsig = lambda z: -np.logaddexp(0.0, -z)  # noqa: E731
  return -logsig(beta * logits) * (1 - label_smoothing) - logsig(-beta * logits) * label_smoothing


def test_dpo_equals_trl_and_a_hand_value():
  pc, pr, rc, rr = _logps(0)
  got = causal_dpo.dpo_loss(pc, pr, rc, rr, beta=0.3)
  np.testing.assert_allclose(got, _trl_sigmoid(pc, pr, rc, rr, 0.3), rtol=1e-5)
  # Policy -1, -3 against reference -2, -2: margin 2, beta 0.5 -> log(1 + e^-1).
  hand = causal_dpo.dpo_loss([-1.0], [-3.0], [-2.0], [-2.0], beta=0.5)
  np.testing.assert_allclose(hand, [math.log1p(math.exp(-1.0))], rtol=1e-6)


def test_dpo_gradient_matches_finite_differences():
  pc, pr, rc, rr = (np.asarray(a, np.float64) for a in _logps(1))
  beta = 0.7
  grad = jax.grad(lambda c, r: jnp.sum(causal_dpo.dpo_loss(c, r, rc, rr, beta=beta)),
                  argnums=(0, 1))(pc.astype(np.float32), pr.astype(np.float32))
  eps = 1e-5
  for which, g in enumerate(grad):
    fd = np.zeros_like(pc)
    for i in range(len(pc)):
      up, down = [pc.copy(), pr.copy()], [pc.copy(), pr.copy()]
      up[which][i] += eps
      down[which][i] -= eps
      fd[i] = (np.sum(_trl_sigmoid(*up, rc, rr, beta)) -
               np.sum(_trl_sigmoid(*down, rc, rr, beta))) / (2 * eps)
    np.testing.assert_allclose(g, fd, rtol=1e-4, atol=1e-6)


def test_sdpo_with_one_negative_is_dpo_and_the_mask_selects_negatives():
  pc, pr, rc, rr = _logps(2, k=4)
  one = causal_dpo.sdpo_loss(pc, pr[:, :1], rc, rr[:, :1], beta=0.2)
  np.testing.assert_allclose(one, causal_dpo.dpo_loss(pc, pr[:, 0], rc, rr[:, 0], beta=0.2),
                             rtol=1e-6)
  mask = np.zeros((len(pc), 4), np.float32)
  mask[:, 2] = 1
  masked = causal_dpo.sdpo_loss(pc, pr, rc, rr, mask, beta=0.2)
  np.testing.assert_allclose(masked, causal_dpo.dpo_loss(pc, pr[:, 2], rc, rr[:, 2], beta=0.2),
                             rtol=1e-6)
  # The softmax form by hand: log(1 + sum_k exp(beta (r_l,k - r_w))).
  r_w, r_l = pc - rc, pr - rr
  hand = np.log1p(np.sum(np.exp(0.2 * (r_l - r_w[:, None])), axis=1))
  np.testing.assert_allclose(causal_dpo.sdpo_loss(pc, pr, rc, rr, beta=0.2), hand, rtol=1e-5)


def test_large_margins_stay_finite():
  big = causal_dpo.sdpo_loss([0.0], [[-1e4, 1e4]], [0.0], [[0.0, -1e4]], beta=1.0)
  np.testing.assert_allclose(big, [2e4], rtol=1e-6)


def test_one_environment_is_sdpo_and_dpo_exactly():
  pc, pr, rc, rr = _logps(3, k=3)
  ones = np.ones((len(pc), 1), np.float32)
  feats = np.random.default_rng(0).normal(size=(len(pc), 5))
  for penalty in causal_dpo.PENALTIES:
    got = causal_dpo.causal_dpo_loss(pc, pr, rc, rr, ones, feats, beta=0.4,
                                     invariance_weight=5.0, penalty=penalty)
    want = jnp.mean(causal_dpo.sdpo_loss(pc, pr, rc, rr, beta=0.4))
    np.testing.assert_allclose(got, want, rtol=1e-6)
  got = causal_dpo.causal_dpo_loss(pc, pr[:, :1], rc, rr[:, :1], ones, beta=0.4)
  np.testing.assert_allclose(got, jnp.mean(causal_dpo.dpo_loss(pc, pr[:, 0], rc, rr[:, 0],
                                                               beta=0.4)), rtol=1e-6)


def _loop_env_losses(loss, probs):
  out = []
  for e in range(probs.shape[1]):
    num = sum(probs[i, e] * loss[i] for i in range(len(loss)))
    out.append(num / sum(probs[i, e] for i in range(len(loss))))
  return np.array(out)


def test_backdoor_and_variance_against_loops():
  rng = np.random.default_rng(4)
  loss = rng.gamma(2.0, 1.0, 11)
  probs = rng.dirichlet(np.ones(3), 11)
  prior = np.array([0.2, 0.5, 0.3])
  per_env = _loop_env_losses(loss, probs)
  np.testing.assert_allclose(causal_dpo.env_losses(loss, probs), per_env, rtol=1e-5)
  np.testing.assert_allclose(causal_dpo.backdoor_adjusted_loss(loss, probs, prior),
                             prior @ per_env, rtol=1e-5)
  np.testing.assert_allclose(causal_dpo.backdoor_adjusted_loss(loss, probs), per_env.mean(),
                             rtol=1e-5)
  np.testing.assert_allclose(causal_dpo.variance_penalty(loss, probs), per_env.var(), rtol=1e-4)
  # With the batch's own environment frequencies as the prior, the adjustment is the
  # plain mean: the adjustment works through the prior.
  np.testing.assert_allclose(causal_dpo.backdoor_adjusted_loss(loss, probs, probs.mean(0)),
                             loss.mean(), rtol=1e-5)


def test_an_empty_environment_is_dropped():
  loss = np.array([1.0, 2.0, 3.0])
  probs = np.array([[1.0, 0.0], [1.0, 0.0], [1.0, 0.0]])
  np.testing.assert_allclose(causal_dpo.backdoor_adjusted_loss(loss, probs), 2.0, rtol=1e-6)
  np.testing.assert_allclose(causal_dpo.variance_penalty(loss, probs), 0.0, atol=1e-7)
  np.testing.assert_allclose(causal_dpo.mmd_penalty(np.eye(3), probs), 0.0, atol=1e-7)


def test_mmd_against_a_loop_and_its_properties():
  rng = np.random.default_rng(5)
  feats = rng.normal(size=(9, 3))
  probs = rng.dirichlet(np.ones(3), 9)
  bw = 1.3
  kern = lambda a, b: math.exp(-np.sum((a - b) ** 2) / (2 * bw ** 2))  # noqa: E731
  w = probs / probs.sum(0)
  total, pairs = 0.0, 0
  for e in range(3):
    for f in range(e + 1, 3):
      mmd = 0.0
      for i in range(9):
        for j in range(9):
          mmd += (w[i, e] * w[j, e] + w[i, f] * w[j, f] - 2 * w[i, e] * w[j, f]) * kern(
              feats[i], feats[j])
      total, pairs = total + mmd, pairs + 1
  np.testing.assert_allclose(causal_dpo.mmd_penalty(feats, probs, bandwidth=bw), total / pairs,
                             rtol=1e-4)
  same = np.full((9, 3), 1 / 3)  # every environment the same distribution
  np.testing.assert_allclose(causal_dpo.mmd_penalty(feats, same), 0.0, atol=1e-6)


def test_kmeans_equals_sklearn_from_the_same_seeding():
  rng = np.random.default_rng(6)
  x = np.concatenate([rng.normal(m, 0.5, (40, 2)) for m in (-2.0, 0.0, 3.0)]).astype(np.float32)
  init = x[[0, 50, 100]] + 0.3
  by_x = lambda c: np.asarray(c)[np.argsort(np.asarray(c)[:, 0])]  # noqa: E731  (rows in order)
  ours = causal_dpo.kmeans(x, None, num_envs=3, init_ExD=init, num_iters=30)
  ref = KMeans(3, init=init, n_init=1, max_iter=30, tol=0.0, algorithm="lloyd").fit(x)
  np.testing.assert_allclose(np.asarray(ours), ref.cluster_centers_, atol=1e-4)  # same order
  seeded = causal_dpo.kmeans(x, jax.random.key(0), num_envs=3)  # k-means++ finds the blobs
  np.testing.assert_allclose(by_x(seeded), by_x(ref.cluster_centers_), atol=1e-4)


def test_soft_assign_is_a_softmax_of_distances():
  rng = np.random.default_rng(7)
  f, c = rng.normal(size=(5, 3)), rng.normal(size=(2, 3))
  d = np.linalg.norm(f[:, None] - c[None], axis=-1)
  want = np.exp(-d / 0.5) / np.exp(-d / 0.5).sum(1, keepdims=True)
  np.testing.assert_allclose(causal_dpo.soft_assign(f, c, temperature=0.5), want, rtol=1e-4)


@pytest.mark.parametrize("seed", range(4))
def test_adjusted_rand_index_equals_sklearn(seed):
  rng = np.random.default_rng(seed)
  a, b = rng.integers(0, 3, 30), rng.integers(0, 4, 30)
  if seed == 1:
    b = (a + 1) % 3  # the same partition, relabelled
  if seed == 2:
    a, b = np.zeros(30, int), np.zeros(30, int)  # both trivial
  np.testing.assert_allclose(causal_dpo.adjusted_rand_index(a, b, num_a=3, num_b=4),
                             adjusted_rand_score(a, b), atol=1e-5)


def test_hit_rate_and_ndcg_equal_a_python_reference():
  rng = np.random.default_rng(8)
  scores = rng.normal(size=(50, 20)).astype(np.float32)
  scores[:, :3] = -np.inf  # excluded items (a history)
  target = rng.integers(3, 20, 50)
  hr, ndcg = [], []
  for s, t in zip(scores, target):
    order = sorted(range(20), key=lambda j: -s[j])
    rank = order.index(t)
    hr.append(1.0 if rank < 5 else 0.0)
    ndcg.append(1.0 / math.log2(rank + 2) if rank < 5 else 0.0)
  np.testing.assert_allclose(causal_dpo.hit_rate_at_k(scores, target, k=5), hr)
  np.testing.assert_allclose(causal_dpo.ndcg_at_k(scores, target, k=5), ndcg, rtol=1e-6)


@pytest.mark.parametrize("call, match", [
    (lambda: causal_dpo.dpo_loss([1.0, 2.0], [1.0], [1.0, 2.0], [1.0, 2.0]), "must share"),
    (lambda: causal_dpo.dpo_loss([1.0], [1.0], [1.0], [1.0], beta=0.0), "beta must be"),
    (lambda: causal_dpo.sdpo_loss([1.0], [[1.0, 2.0]], [1.0], [[1.0]]), "must share"),
    (lambda: causal_dpo.sdpo_loss([1.0], [[1.0]], [1.0], [[1.0]], [[0.0]]), "at least one"),
    (lambda: causal_dpo.backdoor_adjusted_loss([1.0, 2.0], [[0.5, 0.6], [1.0, 0.0]]),
     "sum to 1"),
    (lambda: causal_dpo.backdoor_adjusted_loss([1.0], [[1.0, 0.0]], [0.3, 0.3]), "prior_E"),
    (lambda: causal_dpo.causal_dpo_loss([1.0], [[1.0]], [1.0], [[1.0]], [[1.0]],
                                        invariance_weight=-1.0), "invariance_weight"),
    (lambda: causal_dpo.causal_dpo_loss([1.0], [[1.0]], [1.0], [[1.0]], [[1.0]],
                                        penalty="mmd"), "features_BxD"),
    (lambda: causal_dpo.causal_dpo_loss([np.nan], [[1.0]], [1.0], [[1.0]], [[1.0]]), "finite"),
    (lambda: causal_dpo.hit_rate_at_k([[0.0, -np.inf]], [1]), "target"),
])
def test_bad_input_is_a_clear_value_error(call, match):
  with pytest.raises(ValueError, match=match):
    call()
