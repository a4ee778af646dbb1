r"""LFT (biased latent factorization of tensors) and ALFT, our reconstruction of the aligned-mode constraint.

The model (one function for both; LFT is ALFT without aligned pairs)::

    x[i_0..i_{N-1}] = mu + sum_n b_n[i_n]                                (linear biases)
                    + sum_r prod_n A_n[i_n, r]                           (rank-R CP, the LFT part)
                    + sum_{(p,q) in P} sum_s h_{pq,s}(u_q[i_q] - u_p[i_p]) prod_{n not in {p,q}} V_{pq,n}[i_n, s]

``P`` holds the *aligned* mode pairs: modes p and q index the same ordered
physical quantity (time, a coordinate, a wavelength) with coordinates ``u_p``,
``u_q``. Entity i of mode p and entity j of mode q are joined, in the aligned
bipartite network between the two modes, by an edge whose weight depends on
where j sits relative to i. The aligned term makes that explicit: the (p, q)
interaction of a component s is a function ``h_{pq,s}`` of the signed offset
``d = u_q[i_q] - u_p[i_p]`` only (a Toeplitz matrix on an equispaced grid), shared
by all pairs of entities at that offset and modulated over the remaining modes
by the factors ``V_{pq,n}``. It is **asymmetric**: ``h(d)`` and ``h(-d)`` are free,
separate parameters, so the relation from mode p to mode q (lags, one-sided
responses, Stokes shifts) need not equal the relation from q to p. ``h`` is
piecewise linear on K knots: ``h_{pq,s}(d(i, j)) = sum_k W_pq[i, j, k] C_pq[k, s]``
with ``W_pq: (I_p, I_q, K)`` the interpolation weights of :func:`offset_basis`
(one-hot per integer offset on a shared integer grid).

Objective, on the observed entries ``Omega`` only::

    1/2 sum_Omega (y - x)^2 + l2/2 (sum ||b_n||^2 + sum ||A_n||^2 + sum ||C||^2 + sum ||V||^2)
      + 1/2 sum_{n in ordered} smooth_n ||D2 A_n||^2 + smooth_offset/2 sum_pq ||D2 C_pq||^2

with ``D2`` second differences (smoothness along ordered modes and along the
offset). ``nonneg=True`` projects ``b, A, C, V`` onto ``>= 0`` after every update
(the non-negative LFT variant of Luo et al.; ``mu`` is left free).

Fits: :func:`alft_als` is block-coordinate exact least squares on the observed
entries (each block of the model is linear given the others: ``mu``, each
``b_n``, each ``A_n`` row-wise, each ``V_{pq,n}`` row-wise, each ``C_pq`` jointly),
in a ``lax.scan``; :func:`alft_grad` is full-batch Adam on the same objective.
Both are jitted and vmappable over initial parameters (seeds), masks
(densities, splits) and ``rank_mask_R`` (CP ranks up to ``R_max``).

Where this departs from the paper: the paper's text is not available to us; the
abstract says ALFT "imposes constraints between particular mode pairs" to
model aligned bipartite networks asymmetrically. The offset-function
(Toeplitz) term above, its asymmetry, the smoothness penalties and the
non-negative projection are our reconstruction of that description, not the
paper's equations.

References:
  Luo, Wu, Wang, Wang, Yuan & Zhou, "Temporal pattern-aware QoS prediction via
  biased non-negative latent factorization of tensors", IEEE Trans. Cybern. 50 (2020) (BNLFT);
  ALFT: "Asymmetric Latent Factorization-of-Tensors", ICML 2026 (abstract only).
"""

from __future__ import annotations

import functools
from typing import NamedTuple, Sequence

import jax
import jax.numpy as jnp
import numpy as np
import optax

from reprojax.algorithms import _common
from reprojax.algorithms import _linalg
from reprojax.algorithms.alft import _tensor as T
from reprojax.algorithms.alft._cp import FitTrace, _rmse, init_cp


class ALFTParams(NamedTuple):
  """Parameters of the (A)LFT model; LFT has empty ``offsets`` and ``pair_factors``."""

  mu: jax.Array  # () global mean
  biases: tuple[jax.Array, ...]  # b_n: (I_n,) linear bias of each mode
  factors: tuple[jax.Array, ...]  # A_n: (I_n, R) CP factors
  offsets: tuple[jax.Array, ...]  # C_pq: (K_pq, S) offset-function values at the knots, one per pair
  pair_factors: tuple[tuple[jax.Array, ...], ...]  # V_pq,n: (I_n, S) for the modes n not in the pair


def offset_basis(coords_p, coords_q, knots, symmetric: bool = False) -> np.ndarray:
  """Interpolation weights ``W: (I_p, I_q, K)`` of the offset ``d_ij = u_q[j] - u_p[i]`` on ``knots``.

  ``h(d_ij) = sum_k W[i, j, k] h(knot_k)`` is piecewise-linear interpolation, clamped
  at the end knots. ``symmetric=True`` uses ``|d|`` instead (the symmetric
  ablation; ``knots`` must then be >= 0).
  """
  up, uq, kn = (np.asarray(a, np.float64) for a in (coords_p, coords_q, knots))
  for name, a in (("coords_p", up), ("coords_q", uq), ("knots", kn)):
    if a.ndim != 1 or a.size < 1 or not np.all(np.isfinite(a)):
      raise ValueError(f"{name} must be a finite non-empty 1-D array, got shape {a.shape}")
  if kn.size > 1 and not np.all(np.diff(kn) > 0):
    raise ValueError("knots must be strictly increasing")
  d = uq[None, :] - up[:, None]
  if symmetric:
    d = np.abs(d)
  w = np.zeros(d.shape + (kn.size,))
  if kn.size == 1:
    w[..., 0] = 1.0
    return w
  d = np.clip(d, kn[0], kn[-1])
  k = np.clip(np.searchsorted(kn, d, side="right") - 1, 0, kn.size - 2)
  t = (d - kn[k]) / (kn[k + 1] - kn[k])
  ii, jj = np.indices(d.shape)
  w[ii, jj, k] += 1.0 - t
  w[ii, jj, k + 1] += t
  return w


def integer_offset_basis(size_p: int, size_q: int) -> np.ndarray:
  """One-hot ``W: (I_p, I_q, I_p + I_q - 1)`` of the integer offset ``j - i``: an asymmetric Toeplitz basis."""
  for name, v in (("size_p", size_p), ("size_q", size_q)):
    if isinstance(v, (bool, np.bool_)) or not isinstance(v, (int, np.integer)) or v < 1:
      raise ValueError(f"{name} must be an int >= 1, got {v!r}")
  return offset_basis(np.arange(size_p), np.arange(size_q), np.arange(-(size_p - 1), size_q))


def _others(n_modes, pair):
  return tuple(n for n in range(n_modes) if n not in pair)


def _pair_terms(offset_tensor, vs, pair, others, n_modes, skip=None, idx=None):
  """einsum operand list of one pair's component (omitting mode ``skip``'s V)."""
  idx = n_modes if idx is None else idx
  ops = [] if offset_tensor is None else [offset_tensor, [pair[0], pair[1], idx]]
  for n, v in zip(others, vs):
    if n != skip:
      ops += [v, [n, idx]]
  return ops


def pair_component(offset_tensor, vs, pair, shape) -> jax.Array:
  """``sum_s H[i_p, i_q, s] prod_n V_n[i_n, s]`` as a dense tensor of ``shape``."""
  shape = tuple(int(s) for s in shape)
  n_modes = len(shape)
  if len(pair) != 2 or pair[0] == pair[1] or not all(0 <= int(a) < n_modes for a in pair):
    raise ValueError(f"pair {pair} must name two different modes of a {n_modes}-way tensor")
  others = _others(n_modes, pair)
  offset_tensor = _common.check_array("offset_tensor", offset_tensor)
  p, q = pair
  if np.ndim(offset_tensor) != 3 or np.shape(offset_tensor)[:2] != (shape[p], shape[q]):
    raise ValueError(f"offset_tensor must have shape ({shape[p]}, {shape[q]}, S), got "
                     f"{np.shape(offset_tensor)}")
  s = np.shape(offset_tensor)[2]
  if not isinstance(vs, (tuple, list)) or len(vs) != len(others):
    raise ValueError(f"vs must hold one (I_n, {s}) matrix per mode {others}")
  vs = tuple(_common.check_array(f"vs[{i}]", v) for i, v in enumerate(vs))
  for i, (n, v) in enumerate(zip(others, vs)):
    if np.shape(v) != (shape[n], s):
      raise ValueError(f"vs[{i}] must have shape ({shape[n]}, {s}), got {np.shape(v)}")
  ops = _pair_terms(offset_tensor, vs, pair, others, n_modes)
  out = jnp.einsum(*ops, list(range(n_modes)))
  return jnp.broadcast_to(out, shape) if out.shape != tuple(shape) else out


def alft_predict(params: ALFTParams, bases: Sequence[jax.Array], pairs: tuple = ()) -> jax.Array:
  """The dense model tensor ``x`` of the module docstring.

  Args:
    params: :class:`ALFTParams`.
    bases: ``W_pq: (I_p, I_q, K_pq)`` per aligned pair (:func:`offset_basis`).
    pairs: static tuple of aligned mode pairs ``((p, q), ...)``, same order as ``bases``.
  """
  if not isinstance(params, ALFTParams):
    raise ValueError(f"params must be ALFTParams, got {type(params).__name__}")
  biases = [_common.check_array(f"params.biases[{n}]", b) for n, b in enumerate(params.biases)]
  for n, b in enumerate(biases):
    if np.ndim(b) != 1:
      raise ValueError(f"params.biases[{n}] must be 1-D (one bias per index), got {np.shape(b)}")
  shape = tuple(np.shape(b)[0] for b in biases)
  params, bases, _ = _check_params(params, shape, pairs, bases)
  n_modes = len(shape)
  x = params.mu + T.cp_to_tensor(params.factors)
  for n, b in enumerate(params.biases):
    x = x + b.reshape((-1,) + (1,) * (n_modes - 1 - n))
  for pair, w, c, vs in zip(pairs, bases, params.offsets, params.pair_factors):
    x = x + pair_component(jnp.einsum("abk,ks->abs", w, c), vs, pair, shape)
  return x


def init_alft(key: jax.Array, shape: Sequence[int], rank: int, *, pairs: tuple = (),
              bases: Sequence = (), n_offset_components: int = 1, scale: float = 1.0,
              dtype=jnp.float32) -> ALFTParams:
  """Initial parameters: ``mu = 0``, zero biases, uniform CP factors (``E[[A]] = scale``),
  offset values ``C ~ 0.1 scale N(0, 1)`` and uniform ``V`` (both non-zero, so ALS can move them)."""
  shape = tuple(int(s) for s in shape)
  T.check_rank("rank", rank)
  T.check_rank("n_offset_components", n_offset_components)
  _check_pairs(pairs, bases, shape)
  key = _common.check_key("key", key)
  k_cp, k_pairs = jax.random.split(key)
  factors = init_cp(k_cp, shape, rank, scale, dtype)
  offsets, pair_factors = [], []
  for i, (pair, w) in enumerate(zip(pairs, bases)):
    kc, kv = jax.random.split(jax.random.fold_in(k_pairs, i))
    offsets.append(0.1 * scale * jax.random.normal(kc, (np.shape(w)[2], n_offset_components), dtype))
    others = _others(len(shape), pair)
    kvs = jax.random.split(kv, max(len(others), 1))
    pair_factors.append(tuple(jax.random.uniform(kk, (shape[n], n_offset_components), dtype)
                              for kk, n in zip(kvs, others)))
  return ALFTParams(jnp.zeros((), dtype), tuple(jnp.zeros((s,), dtype) for s in shape), factors,
                    tuple(offsets), tuple(pair_factors))


def _check_pairs(pairs, bases, shape):
  """The aligned pairs and their bases; returns the bases as arrays."""
  if not isinstance(pairs, tuple):
    raise ValueError(f"pairs must be a tuple of (p, q) mode pairs, got {type(pairs).__name__}")
  if len(pairs) != len(bases):
    raise ValueError(f"need one basis per aligned pair: {len(pairs)} pairs, {len(bases)} bases")
  for pair, w in zip(pairs, bases):
    if (len(pair) != 2 or pair[0] == pair[1] or not all(0 <= int(a) < len(shape) for a in pair)):
      raise ValueError(f"aligned pair {pair} must name two different modes of a {len(shape)}-way tensor")
    p, q = pair
    if np.ndim(w) != 3 or np.shape(w)[:2] != (shape[p], shape[q]):
      raise ValueError(f"basis of pair {pair} must have shape ({shape[p]}, {shape[q]}, K), "
                       f"got {np.shape(w)}")
  return tuple(_common.check_array(f"bases[{i}]", w) for i, w in enumerate(bases))


def _check_params(params: ALFTParams, shape, pairs, bases):
  if not isinstance(params, ALFTParams):
    raise ValueError(f"params must be ALFTParams, got {type(params).__name__}")
  bases = _check_pairs(pairs, bases, shape)
  if len(params.biases) != len(shape):
    raise ValueError(f"params.biases needs one vector per mode ({len(shape)}), got {len(params.biases)}")
  arr = _common.check_array
  mu = arr("params.mu", params.mu, scalars=True)
  biases = tuple(arr(f"params.biases[{n}]", b) for n, b in enumerate(params.biases))
  for n, b in enumerate(biases):
    if np.shape(b) != (shape[n],):
      raise ValueError(f"params.biases[{n}] must have shape ({shape[n]},), got {np.shape(b)}")
  factors, r = T.check_factors("params.factors", params.factors, shape)
  if len(params.offsets) != len(pairs) or len(params.pair_factors) != len(pairs):
    raise ValueError(f"params hold {len(params.offsets)} offset blocks for {len(pairs)} pairs")
  for pair, w, c, vs in zip(pairs, bases, params.offsets, params.pair_factors):
    if np.ndim(c) != 2 or np.shape(c)[0] != np.shape(w)[2]:
      raise ValueError(f"offsets of pair {pair} must have shape ({np.shape(w)[2]}, S), got {np.shape(c)}")
    others = _others(len(shape), pair)
    if len(vs) != len(others):
      raise ValueError(f"pair {pair} needs {len(others)} pair factors, got {len(vs)}")
    for n, v in zip(others, vs):
      if np.shape(v) != (shape[n], np.shape(c)[1]):
        raise ValueError(f"pair factor of mode {n} must have shape ({shape[n]}, {np.shape(c)[1]}), "
                         f"got {np.shape(v)}")
  offsets = tuple(arr(f"params.offsets[{i}]", c) for i, c in enumerate(params.offsets))
  pair_factors = tuple(tuple(arr(f"params.pair_factors[{i}][{j}]", v) for j, v in enumerate(vs))
                       for i, vs in enumerate(params.pair_factors))
  return ALFTParams(mu, biases, factors, offsets, pair_factors), bases, r


# ----------------------------------------------------------------------- ALS


def _solve_rows(gram_IxRxR, rhs_IxR, rm_R, l2, dtr=None, smooth=None):
  """Solves the row systems ``(G_i + l2 I) a_i = r_i``; jointly with ``smooth D^T D (x) I`` when ``dtr`` is given."""
  n_rows, r = rhs_IxR.shape
  eye = jnp.eye(r, dtype=rhs_IxR.dtype)
  gram = gram_IxRxR + l2 * eye
  gram, rhs = T.apply_rank_mask_system(gram, rhs_IxR, rm_R)
  if dtr is None:
    return _linalg.solve(gram, rhs)
  big = jnp.einsum("irs,ij->irjs", gram, jnp.eye(n_rows, dtype=gram.dtype))
  big = big + smooth * jnp.einsum("ij,rs->irjs", dtr, jnp.diag(rm_R))
  big = big.reshape(n_rows * r, n_rows * r)
  return _linalg.solve(big, rhs.reshape(-1)).reshape(n_rows, r)


def _masked_rows(x, mask, terms_fn, mode, n_modes):
  """rhs ``(I_n, S)`` of ``x`` and masked Gram ``(I_n, S, S)`` for the operand lists of ``terms_fn(idx)``."""
  rhs = jnp.einsum(x, list(range(n_modes)), *terms_fn(n_modes), [mode, n_modes])
  gram = jnp.einsum(mask, list(range(n_modes)), *terms_fn(n_modes), *terms_fn(n_modes + 1),
                    [mode, n_modes, n_modes + 1])
  return rhs, gram


def _als_sweep(p: ALFTParams, yv, m, bases, rm, l2, smooth_N, smooth_offset, *, pairs,
               ordered_modes, nonneg, fit_bias):
  """One block-coordinate sweep; the residual ``r = y - x`` is updated block by block."""
  shape = yv.shape
  n_modes = len(shape)
  proj = (lambda a: jnp.maximum(a, 0.0)) if nonneg else (lambda a: a)
  n_obs = jnp.maximum(m.sum(), 1.0)
  r = yv - alft_predict(p, bases, pairs)

  def bcast(b, n):
    return b.reshape((-1,) + (1,) * (n_modes - 1 - n))

  # global mean and biases (closed form per entry of each bias vector)
  if fit_bias:
    rb = r + p.mu
    mu = jnp.sum(m * rb) / n_obs
    r = rb - mu
    biases = list(p.biases)
    for n in range(n_modes):
      axes = tuple(k for k in range(n_modes) if k != n)
      rb = r + bcast(biases[n], n)
      biases[n] = proj(jnp.sum(m * rb, axis=axes) / (jnp.sum(m, axis=axes) + l2))
      r = rb - bcast(biases[n], n)
    p = p._replace(mu=mu, biases=tuple(biases))

  # CP factors, row-wise exact least squares on the observed entries
  factors = list(p.factors)
  cp = T.cp_to_tensor(factors)
  for n in range(n_modes):
    rb = r + cp

    def terms(idx, n=n, fs=tuple(factors)):
      return [v for k, a in enumerate(fs) if k != n for v in (a, [k, idx])]

    rhs, gram = _masked_rows(m * rb, m, terms, n, n_modes)
    dtr = None
    if n in ordered_modes:
      d2 = T.second_difference(shape[n], yv.dtype)
      dtr = d2.T @ d2
    factors[n] = proj(_solve_rows(gram, rhs, rm, l2, dtr, smooth_N[n]))
    cp = T.cp_to_tensor(factors)
    r = rb - cp
  p = p._replace(factors=tuple(factors))

  # aligned pairs: row-wise V, then the offset function C jointly
  offsets, pair_factors = list(p.offsets), list(p.pair_factors)
  for i, (pair, w) in enumerate(zip(pairs, bases)):
    others = _others(n_modes, pair)
    s_dim = offsets[i].shape[1]
    ones_s = jnp.ones((s_dim,), yv.dtype)
    vs = list(pair_factors[i])
    h = jnp.einsum("abk,ks->abs", w, offsets[i])
    comp = pair_component(h, vs, pair, shape)
    for j, n in enumerate(others):
      rb = r + comp

      def terms(idx, n=n, vs_=tuple(vs), h=h, pair=pair, others=others):
        return _pair_terms(h, vs_, pair, others, n_modes, skip=n, idx=idx)

      rhs, gram = _masked_rows(m * rb, m, terms, n, n_modes)
      vs[j] = proj(_solve_rows(gram, rhs, ones_s, l2))
      comp = pair_component(h, vs, pair, shape)
      r = rb - comp
    pair_factors[i] = tuple(vs)
    rb = r + comp
    a, b = pair
    rhs = jnp.einsum(m * rb, list(range(n_modes)), w, [a, b, n_modes],
                     *_pair_terms(None, vs, pair, others, n_modes, idx=n_modes + 1),
                     [n_modes, n_modes + 1])  # (K, S)
    gram = jnp.einsum(m, list(range(n_modes)), w, [a, b, n_modes], w, [a, b, n_modes + 2],
                      *_pair_terms(None, vs, pair, others, n_modes, idx=n_modes + 1),
                      *_pair_terms(None, vs, pair, others, n_modes, idx=n_modes + 3),
                      [n_modes, n_modes + 1, n_modes + 2, n_modes + 3])  # (K, S, K, S)
    k_dim = w.shape[2]
    d2 = T.second_difference(k_dim, yv.dtype)
    eye_s = jnp.eye(s_dim, dtype=yv.dtype)
    reg = (l2 * jnp.einsum("kl,st->kslt", jnp.eye(k_dim, dtype=yv.dtype), eye_s)
           + smooth_offset * jnp.einsum("kl,st->kslt", d2.T @ d2, eye_s))
    big = (gram + reg).reshape(k_dim * s_dim, k_dim * s_dim)
    # a tiny jitter keeps knots that no observed offset reaches (all-zero rows) solvable
    big = big + 1e-9 * jnp.trace(big) / big.shape[0] * jnp.eye(big.shape[0], dtype=yv.dtype)
    offsets[i] = proj(_linalg.solve(big, rhs.reshape(-1)).reshape(k_dim, s_dim))
    r = rb - pair_component(jnp.einsum("abk,ks->abs", w, offsets[i]), vs, pair, shape)
  return p._replace(offsets=tuple(offsets), pair_factors=tuple(pair_factors))


def _objective(p, yv, m, bases, rm, l2, smooth_N, smooth_offset, pairs, ordered_modes):
  pm = p._replace(factors=tuple(a * rm for a in p.factors))
  res = (alft_predict(pm, bases, pairs) - yv) * m
  reg = sum(jnp.sum(v ** 2) for v in jax.tree.leaves(
      (pm.biases, pm.factors, pm.offsets, pm.pair_factors)))
  sm = 0.0
  for n in ordered_modes:
    d2 = T.second_difference(yv.shape[n], yv.dtype)
    sm = sm + smooth_N[n] * jnp.sum((d2 @ pm.factors[n]) ** 2)
  for c in pm.offsets:
    sm = sm + smooth_offset * jnp.sum((T.second_difference(c.shape[0], yv.dtype) @ c) ** 2)
  return 0.5 * jnp.sum(res ** 2) + 0.5 * l2 * reg + 0.5 * sm


_STATIC = ("pairs", "ordered_modes", "nonneg", "fit_bias", "n_iter")


@functools.partial(jax.jit, static_argnames=_STATIC)
def _alft_als(p, yv, m, bases, rm, ev_y, ev_m, l2, smooth_N, smooth_offset, *, pairs,
              ordered_modes, nonneg, fit_bias, n_iter):
  p = p._replace(factors=tuple(a * rm for a in p.factors))
  if not fit_bias:
    p = p._replace(mu=jnp.zeros_like(p.mu), biases=tuple(jnp.zeros_like(b) for b in p.biases))

  def step(p, _):
    p = _als_sweep(p, yv, m, bases, rm, l2, smooth_N, smooth_offset, pairs=pairs,
                   ordered_modes=ordered_modes, nonneg=nonneg, fit_bias=fit_bias)
    pred = alft_predict(p, bases, pairs)
    return p, (_rmse(pred, yv, m), _rmse(pred, ev_y, ev_m))

  p, (tr, ev) = jax.lax.scan(step, p, None, length=n_iter)
  return p, FitTrace(tr, ev)


@functools.partial(jax.jit, static_argnames=_STATIC)
def _alft_grad(p, yv, m, bases, rm, ev_y, ev_m, l2, smooth_N, smooth_offset, lr, *, pairs,
               ordered_modes, nonneg, fit_bias, n_iter):
  n_obs = jnp.maximum(m.sum(), 1.0)
  opt = optax.adam(lr)
  proj = (lambda a: jnp.maximum(a, 0.0)) if nonneg else (lambda a: a)

  def clean(p):
    p = p._replace(factors=tuple(proj(a) * rm for a in p.factors),
                   offsets=tuple(proj(c) for c in p.offsets),
                   pair_factors=tuple(tuple(proj(v) for v in vs) for vs in p.pair_factors))
    if fit_bias:
      return p._replace(biases=tuple(proj(b) for b in p.biases))
    return p._replace(mu=jnp.zeros_like(p.mu), biases=tuple(jnp.zeros_like(b) for b in p.biases))

  p = clean(p)
  if fit_bias:  # start the mean at the observed mean: Adam would need many steps to get there
    p = p._replace(mu=jnp.sum(m * (yv - alft_predict(p._replace(mu=0.0 * p.mu), bases, pairs))) / n_obs)

  def loss(p):
    return _objective(p, yv, m, bases, rm, l2, smooth_N, smooth_offset, pairs,
                      ordered_modes) / n_obs

  def step(carry, _):
    p, st = carry
    upd, st = opt.update(jax.grad(loss)(p), st, p)
    p = clean(optax.apply_updates(p, upd))
    pred = alft_predict(p, bases, pairs)
    return (p, st), (_rmse(pred, yv, m), _rmse(pred, ev_y, ev_m))

  (p, _), (tr, ev) = jax.lax.scan(step, (p, opt.init(p)), None, length=n_iter)
  return p, FitTrace(tr, ev)


def _prep(y, mask, params0, bases, pairs, rank_mask_R, eval_mask, ordered_modes):
  y, mask = T.check_tensor_and_mask(y, mask)
  shape = tuple(np.shape(y))
  params0, bases, r = _check_params(params0, shape, pairs, bases)
  T.check_rank_mask(rank_mask_R, r)
  if not isinstance(ordered_modes, tuple) or not all(0 <= int(n) < len(shape) for n in ordered_modes):
    raise ValueError(f"ordered_modes must be a tuple of mode indices < {len(shape)}, got {ordered_modes!r}")
  yv, m = T.observed(y, mask)
  dt = yv.dtype
  ev_y, ev_m = T.evaluation_entries(y, eval_mask, yv)
  rm = jnp.ones((r,), dt) if rank_mask_R is None else jnp.asarray(rank_mask_R, dt)
  params0 = jax.tree.map(lambda a: jnp.asarray(a, dt), params0)
  bases = tuple(jnp.asarray(w, dt) for w in bases)
  return params0, yv, m, bases, rm, ev_y, ev_m


def _smooth_n(smooth, n_modes, dtype):
  if np.ndim(smooth) not in (0, 1) or (np.ndim(smooth) == 1 and np.shape(smooth) != (n_modes,)):
    raise ValueError(f"smooth must be a scalar or shape ({n_modes},), got shape {np.shape(smooth)}")
  _common.check_in_range("smooth", smooth, 0.0)
  return jnp.broadcast_to(jnp.asarray(smooth, dtype), (n_modes,))


def alft_als(y: jax.Array, mask: jax.Array, params0: ALFTParams, bases: Sequence[jax.Array] = (),
             rank_mask_R: jax.Array | None = None, *, pairs: tuple = (), n_iter: int = 50,
             l2: float = 1e-3, smooth=0.0, smooth_offset: float = 0.0,
             ordered_modes: tuple = (), nonneg: bool = False, fit_bias: bool = True,
             eval_mask: jax.Array | None = None) -> tuple[ALFTParams, FitTrace]:
  """Fits (A)LFT by block-coordinate exact least squares on the observed entries.

  Args:
    y: tensor ``(I_0..I_{N-1})``; values at missing entries are ignored.
    mask: 0/1 observation mask of ``y``'s shape (the training entries).
    params0: initial :class:`ALFTParams` (:func:`init_alft`).
    bases: ``W_pq: (I_p, I_q, K)`` per aligned pair; empty for LFT.
    rank_mask_R: optional 0/1 ``(R_max,)`` selecting the CP components (vmappable rank).
    pairs: static aligned mode pairs ``((p, q), ...)``; ``()`` gives LFT.
    n_iter: sweeps (static). l2: ridge ``lambda``.
    smooth: weight of the second differences of the factors ``A_n`` of ``ordered_modes``:
      a scalar, or ``(N,)`` per-mode weights (traced, so vmappable; 0 switches a mode off).
    smooth_offset: weight of the second differences of every offset function ``C_pq``.
    ordered_modes: static tuple of the modes whose factor rows are solved jointly with
      the smoothness term.
    nonneg: project biases and factors onto ``>= 0`` (non-negative LFT).
    fit_bias: fit ``mu`` and the linear biases (else they stay 0: plain masked CP when
      ``pairs == ()``).
    eval_mask: optional held-out entries whose RMSE is traced.

  Returns:
    ``(params, FitTrace)``.
  """
  T.check_rank("n_iter", n_iter)
  args = _prep(y, mask, params0, bases, pairs, rank_mask_R, eval_mask, ordered_modes)
  dt = args[1].dtype
  return _alft_als(*args, jnp.asarray(l2, dt), _smooth_n(smooth, len(args[1].shape), dt),
                   jnp.asarray(smooth_offset, dt), pairs=pairs,
                   ordered_modes=tuple(int(n) for n in ordered_modes), nonneg=bool(nonneg),
                   fit_bias=bool(fit_bias), n_iter=n_iter)


def alft_grad(y: jax.Array, mask: jax.Array, params0: ALFTParams, bases: Sequence[jax.Array] = (),
              rank_mask_R: jax.Array | None = None, *, pairs: tuple = (), n_iter: int = 500,
              lr: float = 0.02, l2: float = 1e-3, smooth=0.0, smooth_offset: float = 0.0,
              ordered_modes: tuple = (), nonneg: bool = False, fit_bias: bool = True,
              eval_mask: jax.Array | None = None) -> tuple[ALFTParams, FitTrace]:
  """Fits (A)LFT by full-batch Adam on the objective of the module docstring (divided by ``|Omega|``).

  Same arguments as :func:`alft_als`, with ``n_iter`` Adam steps of rate ``lr``.
  """
  T.check_rank("n_iter", n_iter)
  args = _prep(y, mask, params0, bases, pairs, rank_mask_R, eval_mask, ordered_modes)
  dt = args[1].dtype
  return _alft_grad(*args, jnp.asarray(l2, dt), _smooth_n(smooth, len(args[1].shape), dt),
                    jnp.asarray(smooth_offset, dt), jnp.asarray(lr, dt),
                    pairs=pairs, ordered_modes=tuple(int(n) for n in ordered_modes),
                    nonneg=bool(nonneg), fit_bias=bool(fit_bias), n_iter=n_iter)
