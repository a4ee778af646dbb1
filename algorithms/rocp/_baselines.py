r"""Conformal baselines (LAC, two APS, RAPS, SOCOP), their two decision rules, best response.

Split-conformal order statistic: :math:`\hat q = s_{(k)}`, the k-th smallest
calibration score with :math:`k = \lceil (1-\alpha)(n+1) \rceil`. When k > n there are
too few points for level 1 - alpha, and two conventions exist: MAPIE's
(``clip=False``, the default): :math:`\hat q = +\infty`, the whole label space; the
ROCP authors' evaluation (``clip=True``): k is clipped to n, :math:`\hat q` is the largest
score (no coverage guarantee at such alphas).

* LAC (Sadinle et al., 2019): :math:`s(x,y) = 1 - p(y|x)`, :math:`C = \{y : s(x,y) \le \hat q\}`
  (can be empty).
* APS as MAPIE (``aps_mapie``; Romano et al., 2020): sort labels by decreasing p;
  :math:`s(x,y)` is the cumulative mass up to and including y, minus
  :math:`u\,p(y|x)` with :math:`u \sim U(0,1)` when randomised (``u_N``; zeros give the
  deterministic score). The set keeps labels down to the first whose cumulative mass
  reaches :math:`\hat q` (MAPIE's ``include_last_label=True``).
* APS as the ROCP paper's evaluation (``aps_paper``): :math:`s(x,y)` is the mass of
  the labels strictly more probable than y (y's own mass excluded, ties not counted,
  no randomisation); :math:`C = \{y : s(x,y) \le \hat q\}`, never empty. Smaller
  sets than MAPIE's convention.
* RAPS (Angelopoulos et al., 2021): APS's cumulative mass plus
  :math:`\lambda (\mathrm{rank}(y) - k_{reg})_+`, deterministic, the same
  include-last-label rule. Not in the ROCP paper's figures.
* SOCOP (in the ROCP paper's figures, lambda = 0.25 and 0.0625): with labels sorted by
  decreasing p, the points :math:`(S_k, g_k)`, k = 0..Y, :math:`S_k` the mass of the top k
  labels and :math:`g_k = 1[k > 1] + \lambda k`; the score of the label of rank i is the
  slope of the lower convex hull of the points over :math:`(S_{i-1}, S_i]`, i.e.
  :math:`\max_{a < i} \min_{b \ge i} (g_b - g_a) / (S_b - S_a)` (slopes increase with
  rank, so the sets :math:`\{y : s(x,y) \le \hat q\}` are nested; a zero-mass step has
  slope +inf).
* Decision rules on a set C: the ROCP minimax action
  :math:`\arg\min_a R(a, C)` at the calibration's alpha (``action="minimax"``), or the
  max-min rule :math:`\arg\min_a \max_{y \in C} \ell(a, y)` (``action="maxmin"``, RAC's;
  alpha = 0 in :math:`R`). An empty set acts as the whole label space under both.
* Best response: :math:`\arg\min_a \sum_y p(y|x) \ell(a, y)`, no set (the paper's
  evaluation first recalibrates p: :mod:`reprojax.algorithms.rocp._decision_calibration`).
* RAC, both readings: :mod:`reprojax.algorithms.rocp._rac`.

References:
  Sadinle, Lei & Wasserman (JASA 2019); Romano, Sesia & Candes (NeurIPS 2020);
  Angelopoulos, Bates, Malik & Jordan (ICLR 2021); Wang & Dobriban (ICML 2026) for the
  minimax action, the SOCOP and APS conventions of their evaluation.
"""

from __future__ import annotations


import jax
import jax.numpy as jnp
import numpy as np

from reprojax.algorithms.rocp import _optimal
from reprojax.algorithms.rocp import _risk
from reprojax.algorithms.rocp import _validate
from reprojax.algorithms.rocp._rocp import Prediction


def _check(probs_cal, labels_cal, probs_test, loss_AxY, alpha):
  for name, p in (("probs_cal_NxY", probs_cal), ("probs_test_MxY", probs_test)):
    _validate.check_probs(name, p)
    if np.ndim(p) != 2:
      raise ValueError(f"{name} must have shape (N, Y), got {np.shape(p)}")
  y = np.shape(probs_cal)[1]
  if np.shape(probs_test)[1] != y:
    raise ValueError(f"probs_test_MxY must have {y} labels like probs_cal_NxY, got "
                     f"{np.shape(probs_test)}")
  _validate.check_nonempty_calibration(np.shape(probs_cal)[0])
  _validate.check_labels("labels_cal_N", labels_cal, y, np.shape(probs_cal)[0])
  if loss_AxY is not None:
    _validate.check_loss("loss_AxY", loss_AxY, y)
  _validate.check_alpha(alpha)


def _sortable_key(x):
  """uint32 keys with the order of the float32 values (IEEE-754 bit trick)."""
  bits = jax.lax.bitcast_convert_type(x.astype(jnp.float32), jnp.uint32)
  sign = bits >> 31
  return jnp.where(sign == 1, ~bits, bits | jnp.uint32(0x80000000))


def kth_smallest(x_N: jax.Array, k: jax.Array) -> jax.Array:
  """The k-th smallest entry (1-based, 1 <= k <= N) without a sort (unchecked).

  Bisection on the order-preserving uint32 keys of float32: 32 passes of a
  count, O(32 N), exact. On CPU this is ~10x faster than ``jnp.sort`` for N = 1e5.
  """
  keys = _sortable_key(x_N)

  def body(_, lohi):
    lo, hi = lohi
    mid = lo + (hi - lo) // 2
    enough = (keys <= mid).sum() >= k
    return jnp.where(enough, lo, mid + 1), jnp.where(enough, mid, hi)

  lo, _ = jax.lax.fori_loop(0, 32, body, (jnp.uint32(0), jnp.uint32(0xFFFFFFFF)))
  return jnp.where(keys <= lo, x_N, -jnp.inf).max().astype(x_N.dtype)


def _conformal_quantile(scores_N: jax.Array, alpha: jax.Array, clip: bool = False) -> jax.Array:
  """Unchecked core of :func:`conformal_quantile` (jit/vmap-friendly)."""
  n = scores_N.shape[0]
  k = _optimal.conformal_rank(jnp.asarray(n, scores_N.dtype), alpha).astype(jnp.int32)
  q = kth_smallest(scores_N, jnp.clip(k, 1, n))
  return q if clip else jnp.where(k > n, jnp.inf, q)


_conformal_quantile_jit = jax.jit(_conformal_quantile, static_argnames="clip")


def conformal_quantile(scores_N: jax.Array, alpha: jax.Array | float,
                       clip: bool = False) -> jax.Array:
  r"""The split-conformal threshold :math:`\hat q = s_{(k)}` of n calibration scores.

  :math:`k = \lceil (1-\alpha)(n+1) \rceil`: the k-th smallest score (exact, sort-free), or
  :math:`+\infty` when k > n (too few points for level 1 - alpha: the set is the
  whole label space). With exchangeable scores, a test score is at most
  :math:`\hat q` with probability at least :math:`1 - \alpha`.

  Args:
    scores_N: calibration nonconformity scores, floating (n,), n >= 1, finite.
    alpha: miscoverage level in (0, 1).
    clip: when k > n, return the largest score instead of +inf (the ROCP authors'
      evaluation; no coverage guarantee at such alphas).

  Returns:
    :math:`\hat q`, a scalar of ``scores_N``'s dtype.

  References:
    Vovk, Gammerman & Shafer, "Algorithmic Learning in a Random World" (2005);
    MAPIE's ``SplitConformalClassifier`` for the convention.
  """
  _validate._common.check_ndim("scores_N", scores_N, 1)
  _validate.check_nonempty_calibration(np.shape(scores_N)[0], "scores_N")
  dtype = np.asarray(scores_N).dtype if _validate._common.is_concrete(scores_N) else scores_N.dtype
  if not np.issubdtype(dtype, np.floating):
    raise ValueError(f"scores_N must be floating point, got dtype {dtype}")
  _validate._common.check_finite("scores_N", scores_N)
  _validate.check_alpha(alpha)
  return _conformal_quantile_jit(jnp.asarray(scores_N), jnp.asarray(alpha), clip=bool(clip))


ACTIONS = ("minimax", "maxmin")


def _finish(sets, loss_AxY, alpha, q, action="minimax"):
  if loss_AxY is None:
    actions = jnp.zeros(sets.shape[:-1], jnp.int32)
  else:
    level = alpha if action == "minimax" else jnp.zeros_like(alpha)
    actions = _risk._minimax_action(loss_AxY.astype(q.dtype), sets, level)
  return Prediction(sets, actions, q)


def _options(clip, action):
  if action not in ACTIONS:
    raise ValueError(f"action must be one of {ACTIONS}, got {action!r}")
  return {"clip": bool(clip), "action": action}


def _arr(x):
  return None if x is None else jnp.asarray(x)


_STATIC = ("clip", "action")


def maxmin_action(loss_AxY: jax.Array, in_set_Y: jax.Array) -> jax.Array:
  r"""RAC's max-min rule :math:`\arg\min_a \max_{y \in C} \ell(a, y)` per set (ties: smallest index).

  Equal to the paper's max-min over utilities :math:`\max \ell - \ell`; an empty set acts
  as the whole label space. int32 of shape ``in_set_Y.shape[:-1]``.
  """
  _validate.check_loss("loss_AxY", loss_AxY)
  _validate.check_in_set("in_set_Y", in_set_Y, np.shape(loss_AxY)[1])
  loss = jnp.asarray(loss_AxY)
  return jax.jit(_risk._minimax_action)(loss, jnp.asarray(in_set_Y), jnp.zeros((), loss.dtype))


# ---------------------------------------------------------------- LAC


def _lac(probs_cal, labels_cal, probs_test, loss_AxY, alpha, clip=False, action="minimax"):
  scores = 1.0 - jnp.take_along_axis(probs_cal, labels_cal[:, None], axis=1)[:, 0]
  q = _conformal_quantile(scores, alpha, clip)
  return _finish(1.0 - probs_test <= q, loss_AxY, alpha, q, action)


_lac_jit = jax.jit(_lac, static_argnames=_STATIC)


def lac(probs_cal_NxY, labels_cal_N, probs_test_MxY, loss_AxY, alpha, clip: bool = False,
        action: str = "minimax") -> Prediction:
  r"""Split conformal LAC sets :math:`\{y : 1 - p(y|x) \le \hat q\}` and their actions.

  Args:
    probs_cal_NxY, labels_cal_N: calibration probabilities (n, Y) and labels (n,).
    probs_test_MxY: test probabilities (m, Y).
    loss_AxY: loss (A, Y) for the actions, or None (actions are zeros).
    alpha: miscoverage in (0, 1).
    clip: the quantile's convention when k > n (module docstring).
    action: ``"minimax"`` (ROCP's rule at alpha) or ``"maxmin"`` (RAC's).

  Returns:
    :class:`Prediction` with ``beta`` holding the score threshold :math:`\hat q`.
  """
  _check(probs_cal_NxY, labels_cal_N, probs_test_MxY, loss_AxY, alpha)
  return _lac_jit(*map(_arr, (probs_cal_NxY, labels_cal_N, probs_test_MxY, loss_AxY, alpha)),
                  **_options(clip, action))


# ---------------------------------------------------------------- APS / RAPS


def _mass_above(probs_NxY):
  """Mass and count of labels strictly more probable than each label: (N, Y) each.

  Sort-free (Y^2 comparisons per input): the cumulative mass of the labels ranked
  before y in decreasing probability, with ties sharing one value.
  """
  mass = jnp.zeros_like(probs_NxY)
  count = jnp.zeros(probs_NxY.shape, jnp.int32)
  for z in range(probs_NxY.shape[-1]):  # Y elementwise passes fuse into one loop on CPU
    p_z = probs_NxY[:, z:z + 1]
    above = p_z > probs_NxY
    mass = mass + jnp.where(above, p_z, 0.0)
    count = count + above
  return mass, count


def _aps_like_scores(probs_NxY, labels_N, u_N, lam, k_reg):
  """Cumulative mass up to and including the label (ties broken by index), - u p_y, + penalty."""
  p_y = jnp.take_along_axis(probs_NxY, labels_N[:, None], axis=-1)  # (N, 1)
  idx = jnp.arange(probs_NxY.shape[-1])
  before = (probs_NxY > p_y) | ((probs_NxY == p_y) & (idx[None] < labels_N[:, None]))
  mass = jnp.where(before, probs_NxY, 0.0).sum(-1)
  rank = before.sum(-1)  # 0-based position of the label
  return mass + (1.0 - u_N) * p_y[:, 0] + lam * jnp.maximum(rank + 1 - k_reg, 0)


def _aps_like_sets(probs_NxY, q, lam, k_reg):
  """Labels down to the first whose (regularised) cumulative mass reaches q, plus its ties.

  y is kept iff the regularised mass strictly above it is below q: this equals
  MAPIE's "sort, find the last label, keep p >= p_last" rule without a sort.
  """
  mass, rank = _mass_above(probs_NxY)
  return mass + lam * jnp.maximum(rank - k_reg, 0) < q


def _aps_mapie(probs_cal, labels_cal, probs_test, loss_AxY, alpha, u_cal, clip=False,
               action="minimax"):
  q = _conformal_quantile(_aps_like_scores(probs_cal, labels_cal, u_cal, 0.0, 0), alpha, clip)
  return _finish(_aps_like_sets(probs_test, q, 0.0, 0), loss_AxY, alpha, q, action)


_aps_mapie_jit = jax.jit(_aps_mapie, static_argnames=_STATIC)


def aps_mapie(probs_cal_NxY, labels_cal_N, probs_test_MxY, loss_AxY, alpha, u_cal_N=None,
              clip: bool = False, action: str = "minimax") -> Prediction:
  r"""Split conformal APS in MAPIE's convention (include last label) with its actions.

  ``u_cal_N``: uniforms in [0, 1] randomising the calibration scores (MAPIE always
  randomises them); None gives the deterministic score. ``clip``, ``action``: as
  :func:`lac`.
  """
  _check(probs_cal_NxY, labels_cal_N, probs_test_MxY, loss_AxY, alpha)
  n = np.shape(probs_cal_NxY)[0]
  if u_cal_N is None:
    u_cal_N = jnp.zeros((n,), jnp.asarray(probs_cal_NxY).dtype)
  if np.shape(u_cal_N) != (n,):
    raise ValueError(f"u_cal_N must have shape ({n},), got {np.shape(u_cal_N)}")
  _validate._common.check_in_range("u_cal_N", u_cal_N, 0.0, 1.0)
  return _aps_mapie_jit(*map(_arr, (probs_cal_NxY, labels_cal_N, probs_test_MxY, loss_AxY,
                                    alpha, u_cal_N)), **_options(clip, action))


def _aps_paper(probs_cal, labels_cal, probs_test, loss_AxY, alpha, clip=True, action="minimax"):
  mass_cal, _ = _mass_above(probs_cal)
  scores = jnp.take_along_axis(mass_cal, labels_cal[:, None], axis=1)[:, 0]
  q = _conformal_quantile(scores, alpha, clip)
  return _finish(_mass_above(probs_test)[0] <= q, loss_AxY, alpha, q, action)


_aps_paper_jit = jax.jit(_aps_paper, static_argnames=_STATIC)


def aps_paper(probs_cal_NxY, labels_cal_N, probs_test_MxY, loss_AxY, alpha, clip: bool = True,
              action: str = "minimax") -> Prediction:
  r"""APS as the ROCP paper's evaluation scores it: the mass strictly above the label.

  :math:`s(x, y) = \sum_{y': p(y'|x) > p(y|x)} p(y'|x)` (deterministic; ties do not
  count), :math:`C = \{y : s(x,y) \le \hat q\}`, never empty. ``clip`` defaults to the
  authors' convention (True); ``action`` as :func:`lac`.
  """
  _check(probs_cal_NxY, labels_cal_N, probs_test_MxY, loss_AxY, alpha)
  return _aps_paper_jit(*map(_arr, (probs_cal_NxY, labels_cal_N, probs_test_MxY, loss_AxY,
                                    alpha)), **_options(clip, action))


def _raps(probs_cal, labels_cal, probs_test, loss_AxY, alpha, lam=0.01, k_reg=1, clip=False,
          action="minimax"):
  zeros = jnp.zeros(labels_cal.shape, probs_cal.dtype)
  q = _conformal_quantile(_aps_like_scores(probs_cal, labels_cal, zeros, lam, k_reg), alpha,
                          clip)
  return _finish(_aps_like_sets(probs_test, q, lam, k_reg), loss_AxY, alpha, q, action)


# One compiled program per (shapes, lam, k_reg): the hyperparameters are static, so
# repeated calls reuse it (a partial built per call would recompile every time).
_raps_jit = jax.jit(_raps, static_argnames=("lam", "k_reg") + _STATIC)


def raps(probs_cal_NxY, labels_cal_N, probs_test_MxY, loss_AxY, alpha, lam: float = 0.01,
         k_reg: int = 1, clip: bool = False, action: str = "minimax") -> Prediction:
  """Split conformal RAPS (deterministic; lambda = 0.01, k_reg = 1 by default) + its actions.

  Not in the ROCP paper's figures (SOCOP is); kept as a baseline of ours.
  """
  _check(probs_cal_NxY, labels_cal_N, probs_test_MxY, loss_AxY, alpha)
  if not lam >= 0 or int(k_reg) < 0:
    raise ValueError(f"RAPS needs lam >= 0 and k_reg >= 0, got lam={lam}, k_reg={k_reg}")
  return _raps_jit(*map(_arr, (probs_cal_NxY, labels_cal_N, probs_test_MxY, loss_AxY, alpha)),
                   lam=float(lam), k_reg=int(k_reg), **_options(clip, action))


# ---------------------------------------------------------------- SOCOP


def socop_scores(probs_NxY: jax.Array, lam: float) -> jax.Array:
  r"""SOCOP's score of every label, (N, Y): the lower-convex-hull slope at the label's rank.

  Labels sorted by decreasing p (ties by index); :math:`S_k` the top-k mass,
  :math:`g_k = 1[k > 1] + \lambda k`; the label of rank i scores
  :math:`\max_{a < i} \min_{b \ge i} (g_b - g_a)/(S_b - S_a)`, the slope of the greatest
  convex minorant of the points on :math:`(S_{i-1}, S_i]` (+inf across zero mass).
  Unchecked (jit/vmap-friendly); ``lam`` a Python float.
  """
  y = probs_NxY.shape[-1]
  order = jnp.argsort(-probs_NxY, axis=-1, stable=True)
  p_sorted = jnp.take_along_axis(probs_NxY, order, axis=-1)
  s_k = jnp.concatenate([jnp.zeros_like(p_sorted[:, :1]), jnp.cumsum(p_sorted, -1)], -1)
  k = jnp.arange(y + 1)
  g_k = (k > 1).astype(probs_NxY.dtype) + lam * k
  ds = s_k[:, None, :] - s_k[:, :, None]  # (N, a, b): S_b - S_a
  dg = g_k[None, :] - g_k[:, None]  # (a, b)
  slope = jnp.where(ds > 0, dg / jnp.where(ds > 0, ds, 1.0), jnp.inf)
  # rank i = 1..Y: a in [0, i), b in [i, Y]
  ranks = jnp.arange(1, y + 1)
  valid_a = k[None, :] < ranks[:, None]  # (i, a)
  valid_b = k[None, :] >= ranks[:, None]  # (i, b)
  inner = jnp.where(valid_b[None, :, None, :], slope[:, None], jnp.inf).min(-1)  # (N, i, a)
  score_sorted = jnp.where(valid_a[None], inner, -jnp.inf).max(-1)  # (N, i)
  inverse = jnp.argsort(order, axis=-1)
  return jnp.take_along_axis(score_sorted, inverse, axis=-1)


def _socop(probs_cal, labels_cal, probs_test, loss_AxY, alpha, lam=0.25, clip=True,
           action="minimax"):
  scores = jnp.take_along_axis(socop_scores(probs_cal, lam), labels_cal[:, None], axis=1)[:, 0]
  q = _conformal_quantile(scores, alpha, clip)
  return _finish(socop_scores(probs_test, lam) <= q, loss_AxY, alpha, q, action)


_socop_jit = jax.jit(_socop, static_argnames=("lam",) + _STATIC)


def socop(probs_cal_NxY, labels_cal_N, probs_test_MxY, loss_AxY, alpha, lam: float = 0.25,
          clip: bool = True, action: str = "minimax") -> Prediction:
  r"""Split conformal SOCOP sets :math:`\{y : s(x,y) \le \hat q\}` and their actions.

  The score is :func:`socop_scores`; ``lam`` = 0.25 is what the authors' evaluation
  passes (their class default is 0.0625; the paper's figures name both). ``clip``
  defaults to the authors' quantile convention; ``action`` as :func:`lac`.
  """
  _check(probs_cal_NxY, labels_cal_N, probs_test_MxY, loss_AxY, alpha)
  if not lam > 0:
    raise ValueError(f"SOCOP needs lam > 0, got {lam}")
  return _socop_jit(*map(_arr, (probs_cal_NxY, labels_cal_N, probs_test_MxY, loss_AxY, alpha)),
                    lam=float(lam), **_options(clip, action))


# ---------------------------------------------------------------- best response


def _best_response(probs_NxY, loss_AxY):
  return jnp.argmin(probs_NxY @ loss_AxY.astype(probs_NxY.dtype).T, axis=-1).astype(jnp.int32)


def best_response(probs_NxY: jax.Array, loss_AxY: jax.Array) -> jax.Array:
  r""":math:`\arg\min_a \sum_y p(y|x)\,\ell(a,y)` per input (ties: smallest index); int32 (N,)."""
  _validate.check_probs("probs_NxY", probs_NxY)
  _validate.check_loss("loss_AxY", loss_AxY, np.shape(probs_NxY)[-1])
  return jax.jit(_best_response)(jnp.asarray(probs_NxY), jnp.asarray(loss_AxY))
