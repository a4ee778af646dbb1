r"""Transfer error between a GCN on a sampled graph and its graphon limit, and its bound.

**Limit object.** For a graphon ``W`` on a latent probability space and a GCN
with parameters ``theta`` (``reprojax.models.gcn.GCN``), the limit network is the same
recursion with the integral operator ``(T_W f)(x) = int W(x, y) f(y) dmu(y)``
(GWCN) or with the normalised kernel ``W(x, y) / sqrt(d(x) d(y))`` (c-GCN). We
evaluate it by quadrature on ``N`` points ``v_a`` (weights ``1/N``) and read it
at the graph's own latents ``u_i`` (query points): :func:`limit_shift` builds
the ``(N + Q) x (N + Q)`` operator whose rows aggregate over the quadrature
points only, so the same ``GCN.apply`` gives ``Phi(W; x)(v_a)`` and ``Phi(W; x)(u_i)``.

**Transfer error** (:func:`transfer_error`): the relative ``L^2`` distance

    E_n = || Phi(S_n; x_n) - Phi(W; x)|_{u} ||_n / || Phi(W; x)|_{u} ||_n,
    ||z||_n^2 = (1/n) sum_i ||z_i||^2,

a Monte-Carlo estimate of the ``L^2(mu)`` norm between the graph's induced
output and the limit output (Ruiz et al. 2020 measure it with step functions
on ``[0,1]``; reading the limit at the latents works on any latent space).

**Bound** (:func:`size_term`, :func:`density_term`, :func:`transfer_bound`),
derived here from the abstract and its lineage (the paper's own constants are not
public to us). For a ``K = 2``-tap layer ``z' = sigma(z H_0 + S z H_1 + b)`` with
1-Lipschitz ``sigma`` and identical inputs on both sides, the output gap obeys

    a_{l+1} <= ||H_{l,0}|| a_l + ||H_{l,1}|| ( ||S_n|| a_l + e_l ),   a_0 = 0,
    e_l = ||(S_n - T_W) f_l||_n <= s_n ||f_l||_inf + d_n ||f_l||_n,

with ``f_l`` the limit network's layer-``l`` signal (a fixed function), so

    E_n ||Phi_W||_n <= sum_l ||H_{l,1}|| (s_n ||f_l||_inf + d_n ||f_l||_n)
                          prod_{k > l} (||H_{k,0}|| + ||S_n|| ||H_{k,1}||).

The **size term** ``s_n`` bounds the quadrature error of the ``n`` latents,
``max_i |(1/n) sum_{j != i} W(u_i, u_j) f(u_j) - (T_W f)(u_i)|``: Hoeffding per
node and feature with a union bound over ``n F`` events gives, with probability
``1 - delta``, ``s_n = w_max (sqrt(2 log(2 n F / delta) / (n - 1)) + 1/n)``: it
depends on ``n`` only, ``O(sqrt(log n / n))``. The **density term** ``d_n``
bounds ``||A / (n rho) - P / n||`` (``P_ij = W(u_i, u_j)``, ``i != j``) by the
matrix Bernstein inequality (Tropp 2012) for the independent Bernoulli edges:
``d_n = (L/3 + sqrt(L^2/9 + 2 v L)) / (n rho)`` with ``L = log(2 n / delta)`` and
``v = max_i sum_j rho P_ij (1 - rho P_ij) <= n rho w_max``, i.e.
``O(sqrt(log n / (n rho)) + log n / (n rho))``: it vanishes iff the expected
degree ``n rho`` outgrows ``log n``. The split into the two terms is exact since
the chain is linear in ``e_l``. Departures: (i) ``T_W`` is itself replaced by an
``N``-point quadrature in experiments; (ii) ``||S_n||`` is the measured norm of
the sampled shift (the bound is conditional on it); (iii) only ``K = 2`` taps.

References:
  Ruiz, Chamon & Ribeiro, NeurIPS 2020 (Thm. 2 and its proof); Tropp, "User-
  friendly tail bounds for sums of random matrices", FoCM 2012 (Thm. 1.4);
  Hoeffding 1963.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from reprojax.algorithms import _common


def limit_shift(kernel_NxN: jax.Array, kernel_QxN: jax.Array, normalized: bool = False):
  """The ``(N + Q) x (N + Q)`` quadrature operator of the graphon limit.

  Args:
    kernel_NxN: ``W(v_a, v_b)`` on the ``N`` quadrature points.
    kernel_QxN: ``W(u_i, v_b)`` from the ``Q`` query points to the quadrature.
    normalized: ``False`` for ``T_W`` (GWCN limit), ``True`` for the c-GCN limit
      ``W(x, y) / sqrt(d(x) d(y))``, ``d(x) = (1/N) sum_b W(x, v_b)``.

  Returns:
    ``M`` with ``M[:, :N] = [kernel_NxN; kernel_QxN] / N`` (normalised if asked)
    and zeros in the last ``Q`` columns: row ``r`` of ``M @ z`` is the quadrature
    of ``int K(x_r, y) z(y) dy``.
  """
  kernel_NxN, kernel_QxN = _common.check_arrays(
      {"kernel_NxN": kernel_NxN, "kernel_QxN": kernel_QxN}).values()
  n = kernel_NxN.shape[0]
  _common.check_in_range("kernel_NxN", kernel_NxN, lo=0.0)
  _common.check_in_range("kernel_QxN", kernel_QxN, lo=0.0)
  k = jnp.concatenate([kernel_NxN, kernel_QxN], axis=0) / n
  if normalized:
    d_all = jnp.sum(k, axis=1)
    k = k * jax.lax.rsqrt(d_all)[:, None] * jax.lax.rsqrt(d_all[:n])[None, :]
  q = kernel_QxN.shape[0]
  return jnp.concatenate([k, jnp.zeros((n + q, q), k.dtype)], axis=1)


def rms(z_NxF: jax.Array, mask_N: jax.Array | None = None) -> jax.Array:
  """``||z||_n = sqrt(mean_i ||z_i||^2)`` over the nodes in ``mask_N`` (all if None)."""
  z_NxF, mask_N = _common.check_arrays({"z_NxF": z_NxF, "mask_N": mask_N},
                                       kinds={"mask_N": "index"}).values()
  sq = jnp.sum(z_NxF ** 2, axis=-1)
  if mask_N is None:
    return jnp.sqrt(jnp.mean(sq))
  m = mask_N.astype(sq.dtype)
  return jnp.sqrt(jnp.sum(sq * m) / jnp.maximum(jnp.sum(m), 1.0))


def transfer_error(out_graph_NxF: jax.Array, out_limit_NxF: jax.Array,
                   mask_N: jax.Array | None = None) -> jax.Array:
  """Relative ``L^2`` transfer error ``||a - b||_n / ||b||_n`` (see module docstring)."""
  out_graph_NxF, out_limit_NxF, mask_N = _common.check_arrays(
      {"out_graph_NxF": out_graph_NxF, "out_limit_NxF": out_limit_NxF, "mask_N": mask_N},
      kinds={"mask_N": "index"}).values()
  return rms(out_graph_NxF - out_limit_NxF, mask_N) / rms(out_limit_NxF, mask_N)


def size_term(n, w_max, delta: float = 0.05, num_features: int = 1) -> jax.Array:
  """``s_n = w_max (sqrt(2 log(2 n F / delta) / (n - 1)) + 1 / n)`` (Hoeffding + union bound)."""
  _common.check_in_range("n", n, lo=2.0)
  _common.check_in_range("w_max", w_max, lo=0.0)
  _common.check_in_range("delta", delta, lo=0.0, hi=1.0, lo_open=True, hi_open=True)
  n = jnp.asarray(n, jnp.float32)
  log_term = jnp.log(2.0 * n * num_features / delta)
  return w_max * (jnp.sqrt(2.0 * log_term / (n - 1.0)) + 1.0 / n)


def density_term(n, density, var_max, delta: float = 0.05) -> jax.Array:
  """``d_n = (L/3 + sqrt(L^2/9 + 2 v L)) / (n rho)``, ``L = log(2n/delta)`` (matrix Bernstein).

  ``var_max`` is ``v = max_i sum_j rho P_ij (1 - rho P_ij)`` (at most ``n rho w_max``).
  """
  _common.check_in_range("n", n, lo=2.0)
  _common.check_in_range("density", density, lo=0.0, hi=1.0, lo_open=True)
  _common.check_in_range("var_max", var_max, lo=0.0)
  _common.check_in_range("delta", delta, lo=0.0, hi=1.0, lo_open=True, hi_open=True)
  n = jnp.asarray(n, jnp.float32)
  log_term = jnp.log(2.0 * n / delta)
  t = log_term / 3.0 + jnp.sqrt(log_term ** 2 / 9.0 + 2.0 * var_max * log_term)
  return t / (n * density)


def bernoulli_variance(prob_NxN: jax.Array, density) -> jax.Array:
  """``v = max_i sum_{j != i} rho P_ij (1 - rho P_ij)`` for the density term."""
  _common.check_ndim("prob_NxN", prob_NxN, 2)
  if np.shape(prob_NxN)[0] != np.shape(prob_NxN)[1]:
    raise ValueError(f"prob_NxN must be square, got shape {np.shape(prob_NxN)}")
  _common.check_in_range("prob_NxN", prob_NxN, lo=0.0, hi=1.0)
  _common.check_in_range("density", density, lo=0.0, hi=1.0, lo_open=True)
  p = jnp.minimum(1.0, density * prob_NxN)
  v = p * (1.0 - p)
  v = v - jnp.diag(jnp.diag(v))
  return jnp.max(jnp.sum(v, axis=1))


def transfer_bound(h0_norms_L, h1_norms_L, f_sup_L, f_rms_L, shift_norm, size_coef,
                   density_coef):
  """The bound's size and density parts, ``(B_size, B_density)``, on ``E_n ||Phi_W||_n``.

  Args:
    h0_norms_L, h1_norms_L: spectral norms of each layer's tap matrices ``H_{l,0}, H_{l,1}``.
    f_sup_L, f_rms_L: ``||f_l||_inf`` (sup over the latent space of the feature vector's
      norm, per-coordinate sups combined) and ``||f_l||_n`` of the limit network's
      input to layer ``l``.
    shift_norm: ``||S_n||``, the operator norm of the sampled shift.
    size_coef, density_coef: ``s_n`` and ``d_n``.

  Returns:
    ``(B_size, B_density)``; the bound on the absolute ``L^2`` gap is their sum.
  """
  got = _common.check_arrays(
      {"h0_norms_L": h0_norms_L, "h1_norms_L": h1_norms_L, "f_sup_L": f_sup_L,
       "f_rms_L": f_rms_L, "shift_norm": shift_norm, "size_coef": size_coef,
       "density_coef": density_coef},
      scalars=("shift_norm", "size_coef", "density_coef"))
  for name, a in got.items():
    _common.check_in_range(name, a, lo=0.0)
  h0, h1, f_sup, f_rms, shift_norm, size_coef, density_coef = (
      jnp.asarray(a, jnp.float32) for a in got.values())
  growth_L = h0 + shift_norm * h1
  # prod_{k > l} growth_k, via a reversed cumulative product.
  tail_L = jnp.concatenate([jnp.cumprod(growth_L[::-1])[::-1][1:], jnp.ones((1,))])
  b_size = jnp.sum(h1 * size_coef * f_sup * tail_L)
  b_dens = jnp.sum(h1 * density_coef * f_rms * tail_L)
  return b_size, b_dens


def fit_power_law(n_M, err_M):
  """Least-squares slope and intercept of ``log err`` against ``log n`` (numpy).

  Returns ``(rate, log_c)`` with ``err ~ exp(log_c) n^{-rate}`` (``rate > 0`` = decay).
  """
  got = _common.check_arrays({"n_M": n_M, "err_M": err_M})
  for name, a in got.items():
    _common.check_in_range(name, a, lo=0.0, lo_open=True)
  if np.shape(got["n_M"])[0] < 2:
    raise ValueError(f"n_M and err_M need at least 2 points, got {np.shape(got['n_M'])[0]}")
  x, y = (np.log(np.asarray(a, np.float64)) for a in got.values())
  slope, intercept = np.polyfit(x, y, 1)
  return float(-slope), float(intercept)
