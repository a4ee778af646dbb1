r"""Finding :math:`\epsilon`-stationary points with comparisons: our second-order method and the baseline.

Second-order method (classical; quantum estimator simulated classically). Each
iteration at :math:`x` with radius :math:`r \le r_{\max} = c_r\sqrt{\epsilon/\rho}`:

1. :math:`\hat g`: normalized gradient (:math:`O(n\log(n/\delta))` comparisons);
2. :math:`R = H/\|g\|`: Hessian in gradient units (:mod:`._hessian`,
   :math:`O(n^2\log(n/\delta))`; :math:`O(n\log(n/\delta))` with the quantum estimator);
3. the trust-region step :math:`d = \arg\min_{\|d\|\le r} \hat g^\top d + \tfrac12 d^\top R d`
   (the model :math:`m(d)/\|g\|`, which is what comparisons can identify), solved
   exactly by eigendecomposition and bisection on the multiplier (hard case included);
4. two comparisons: the better of :math:`x+d` and the normalized-gradient step
   :math:`x - r\hat g`, accepted only if it is better than :math:`x`;
   on rejection :math:`r \leftarrow r/2`, on acceptance :math:`r\leftarrow\min(2r, r_{\max})`.

Why :math:`\epsilon^{-1.5}`: with radius :math:`\sqrt{\epsilon/\rho}` the
trust-region step decreases :math:`f` by :math:`\Omega(\epsilon^{1.5}/\sqrt\rho)` while
:math:`\|g\|>\epsilon` or :math:`\lambda_{\min}(H) < -\sqrt{\rho\epsilon}` (the fixed-radius
analysis of cubic-regularised / trust-region Newton, Nesterov & Polyak 2006), so
:math:`O(\sqrt\rho\,\Delta/\epsilon^{1.5})` iterations suffice; times
:math:`\tilde O(n^2)` comparisons per iteration gives the paper's
:math:`\tilde O(n^2/\epsilon^{1.5})`, and :math:`\tilde O(n/\epsilon^{1.5})` with the quantum
estimator. Acceptance by comparison keeps :math:`f` monotone, which the analysis needs
and which no value of :math:`f` is required for. We depart from the paper in the
details of each step (its algorithm is not public); the orders are the same.

Baseline (Zhang & Li 2024, Comparison-GD): :math:`x \leftarrow x - \eta\hat g` with
:math:`\eta = \epsilon/(2\ell)` and :math:`\hat g` at angle accuracy :math:`1/4`: while
:math:`\|g\|>\epsilon` each step lowers :math:`f` by at least :math:`\epsilon^2/(8\ell)`-ish,
:math:`O(\ell\Delta/\epsilon^2)` steps of :math:`O(n\log n)` comparisons:
:math:`\tilde O(n/\epsilon^2)`.

Neither method ever receives ``f``: they hold a :class:`ComparisonOracle`. The
harness :func:`queries_to_stationarity` stops a run when an *evaluator's* monitor
(e.g. the true gradient norm) says :math:`\|\nabla f\|\le\epsilon`; the monitor is
never passed to a method.

References:
  Wang, Zhang, Tao, Zhang & Li, "Finding Stationary Points by Comparisons" (ICML 2026);
  Zhang & Li, "Comparisons Are All You Need for Optimizing Smooth Functions" (2024);
  Nesterov & Polyak, "Cubic regularization of Newton method and its global performance" (2006).
"""

from __future__ import annotations

from typing import Callable, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from reprojax.algorithms import _common
from reprojax.algorithms import _linalg
from reprojax.algorithms.comparison_oracle import _gradient
from reprojax.algorithms.comparison_oracle import _hessian
from reprojax.algorithms.comparison_oracle import _jit
from reprojax.algorithms.comparison_oracle import _oracle
from reprojax.algorithms.comparison_oracle import _quantum


class SecondOrderState(NamedTuple):
  x: jax.Array  # (n,) current iterate
  radius: jax.Array  # () current trust radius r
  radius_max: jax.Array  # () r_max = c_r sqrt(eps / rho)
  oracle: _oracle.OracleState  # query count and noise key
  key: jax.Array  # PRNG key (random bases, quantum outcomes)


class GDState(NamedTuple):
  x: jax.Array  # (n,) current iterate
  step: jax.Array  # () eta = eps / (2 ell)
  oracle: _oracle.OracleState
  key: jax.Array


class Method(NamedTuple):
  """A comparison-based optimizer: ``state = init(x0, key, eps)``, ``state = step(state)``."""

  name: str
  init: Callable[..., NamedTuple]
  step: Callable[[NamedTuple], NamedTuple]
  n: int | None = None  # the dimension of its oracle (x0 must have shape (n,))


def _check_trust_region(arguments) -> None:
  got = _common.check_arrays({n: arguments[n] for n in ("g_N", "R_NxN", "r")}, scalars=("r",))
  arguments.update(got)


@_jit.jit_when_eager(static_argnames=("iters",), check=_check_trust_region)
def trust_region_step(g_N, R_NxN, r, iters: int = 100):
  r"""Exact minimiser of :math:`g^\top d + \frac12 d^\top R d` over :math:`\|d\|\le r`.

  KKT: :math:`(R+\sigma I)d = -g`, :math:`\sigma\ge\max(0,-\lambda_{\min})`,
  :math:`\sigma(\|d\|-r)=0`. Interior Newton step when :math:`R\succ0` and
  :math:`\|R^{-1}g\|\le r`; otherwise bisection on :math:`\sigma` for
  :math:`\|d(\sigma)\|=r`, and in the hard case the boundary is reached along the
  bottom eigenvector.

  Args:
    g_N: the (normalized) gradient, shape ``(n,)``.
    R_NxN: the symmetric model Hessian, shape ``(n, n)``.
    r: the radius, a scalar ``> 0``.
    iters: bisection steps on :math:`\sigma` (static).

  Returns:
    ``d_N``, the step.
  """
  got = _common.check_arrays({"g_N": g_N, "R_NxN": R_NxN, "r": r}, scalars=("r",))
  g_N, R_NxN, r = got.values()
  if np.shape(R_NxN) != (np.shape(g_N)[0],) * 2:  # (check_arrays: g_N 1-D, finite; r 0-d)
    raise ValueError(f"R_NxN must have shape (n, n) with n = len(g_N), got {np.shape(g_N)} and "
                     f"{np.shape(R_NxN)}")
  if _common.is_concrete(r) and not np.asarray(r) > 0:
    raise ValueError(f"r must be > 0, got {r}")
  lam, V = _linalg.eigh(R_NxN)
  b = V.T @ g_N
  lam_min = lam[0]
  tiny = 1e-12 * (1.0 + jnp.max(jnp.abs(lam)))
  lo = jnp.maximum(0.0, -lam_min) + tiny
  norm_at = lambda s: jnp.linalg.norm(b / (lam + s))
  hi = lo + jnp.linalg.norm(b) / r + tiny

  def body(_, c):
    a, z = c
    m = 0.5 * (a + z)
    big = norm_at(m) > r
    return jnp.where(big, m, a), jnp.where(big, z, m)

  a, z = jax.lax.fori_loop(0, iters, body, (lo, hi))
  sigma = jnp.where(norm_at(lo) > r, 0.5 * (a + z), lo)
  p = -V @ (b / (lam + sigma))
  newton = -V @ (b / jnp.where(lam_min > 0, lam, 1.0))
  interior = (lam_min > 0) & (jnp.linalg.norm(newton) <= r)
  # Hard case: the norm stays below r at the smallest admissible sigma.
  hard = (lam_min <= 0) & (norm_at(lo) <= r)
  v_min = V[:, 0]
  tau = jnp.sqrt(jnp.maximum(r ** 2 - jnp.sum(p ** 2), 0.0))
  tau = jnp.where(jnp.dot(g_N, v_min) > 0, -tau, tau)
  d = jnp.where(interior, newton, jnp.where(hard, p + tau * v_min, p))
  return d


def second_order_method(oracle: _oracle.ComparisonOracle, *, rho: float = 1.0,
                        radius_scale: float = 1.0, gamma: float = 1e-5, bits: int | None = None,
                        estimator: str = "classical", delta_q: float = 1e-6,
                        scale_steps: int = 24) -> Method:
  r"""Our comparison-based second-order method (see module docstring).

  Args:
    oracle: comparison oracle (static); exact for ``estimator="quantum"``.
    rho: Hessian-Lipschitz constant used for the radius :math:`c_r\sqrt{\epsilon/\rho}`.
    radius_scale: :math:`c_r`.
    gamma: finite-difference radius of the gradient estimates.
    bits: bisection steps of the classical gradient estimates (default: accuracy 1e-6).
    estimator: ``"classical"`` or ``"quantum"`` (simulated classically, closed form).
    delta_q: angle accuracy of each quantum gradient estimate.
    scale_steps: comparisons of the scale search of the Hessian estimator.
  """
  if estimator not in ("classical", "quantum"):
    raise ValueError(f"estimator must be 'classical' or 'quantum', got {estimator!r}")
  _oracle.validate_positive("rho", rho)
  _oracle.validate_positive("gamma", gamma)
  n = oracle.n
  bits = _gradient.bits_for_accuracy(n, 1e-6) if bits is None else int(bits)
  qparams = None
  if estimator == "quantum":
    _quantum._check_exact(oracle)
    qparams = _quantum.quantum_params(n, delta_q)

  def init(x0_N, key, eps):
    k1, k2 = jax.random.split(key)
    rmax = radius_scale * jnp.sqrt(jnp.asarray(eps, x0_N.dtype) / rho)
    return SecondOrderState(x=x0_N, radius=rmax, radius_max=rmax,
                            oracle=_oracle.init_state(k1), key=k2)

  def step(state):
    x = state.x
    key, kh = jax.random.split(state.key)
    gam = jnp.asarray(gamma, x.dtype)
    g_hat, s, V, D, ost = _hessian.estimate_all(oracle, state.oracle, x, kh, gam, bits, estimator,
                                                qparams, t_max=state.radius, J=scale_steps)
    R = _hessian.hessian_from_directions(g_hat, s, V, D)
    d_tr = trust_region_step(g_hat, R, state.radius)
    d_gd = -state.radius * g_hat
    pick_gd, ost = _oracle.compare(oracle, ost, (x + d_tr)[None], (x + d_gd)[None])
    cand = jnp.where(pick_gd[0], x + d_gd, x + d_tr)
    better, ost = _oracle.compare(oracle, ost, x[None], cand[None])
    ok = better[0]
    x_new = jnp.where(ok, cand, x)
    radius = jnp.where(ok, jnp.minimum(2 * state.radius, state.radius_max), 0.5 * state.radius)
    radius = jnp.maximum(radius, 1e-9 * state.radius_max)
    return SecondOrderState(x=x_new, radius=radius, radius_max=state.radius_max, oracle=ost,
                            key=key)

  name = "ours" if estimator == "classical" else "quantum_sim"
  return Method(name=name, init=init, step=step, n=n)


def zhang_li_method(oracle: _oracle.ComparisonOracle, *, ell: float = 1.0, gamma: float = 1e-5,
                    delta: float = 0.25) -> Method:
  r"""The Zhang & Li (2024) comparison-based normalized gradient descent (baseline).

  Args:
    oracle: comparison oracle (static).
    ell: gradient-Lipschitz constant; step :math:`\eta = \epsilon/(2\ell)`.
    gamma: finite-difference radius of the gradient estimate.
    delta: angle accuracy of each gradient estimate.
  """
  _oracle.validate_positive("ell", ell)
  _oracle.validate_positive("gamma", gamma)
  bits = _gradient.bits_for_accuracy(oracle.n, delta)

  def init(x0_N, key, eps):
    k1, k2 = jax.random.split(key)
    return GDState(x=x0_N, step=jnp.asarray(eps, x0_N.dtype) / (2.0 * ell),
                   oracle=_oracle.init_state(k1), key=k2)

  def step(state):
    g_hat, ost = _gradient._normalized_gradient_core(
        oracle, state.oracle, state.x, jnp.asarray(gamma, state.x.dtype), bits)
    return state._replace(x=state.x - state.step * g_hat, oracle=ost)

  return Method(name="zhang_li", init=init, step=step, n=oracle.n)


def _validate_run(method, x0_N, eps, n):
  if not isinstance(method, Method):
    raise ValueError(f"method must be a Method, got {type(method).__name__}")
  x0_N = _oracle.validate_point("x0_N", x0_N, n)
  _oracle.validate_positive("eps", eps)
  return x0_N


def _check_run(arguments) -> None:
  """The eager path of :func:`run` and :func:`queries_to_stationarity`."""
  arguments["x0_N"] = _validate_run(arguments["method"], arguments["x0_N"], arguments["eps"],
                                    arguments["method"].n)
  _common.check_key("key", arguments["key"])


@_jit.jit_when_eager(static_argnames=("method", "num_steps"), check=_check_run)
def run(method: Method, x0_N, key, eps, num_steps: int):
  r"""Runs ``num_steps`` iterations of ``method`` from ``x0_N`` (a ``lax.scan``).

  jit/vmap-able; an eager call compiles once per method object, ``num_steps`` and shape.

  Args:
    method: a :class:`Method` (:func:`make_method`), static.
    x0_N: start, shape ``(n,)``.
    key: PRNG key of the method.
    eps: target :math:`\epsilon` (sets the radius or step size).
    num_steps: iterations (static).

  Returns:
    ``(final_state, xs_TxN, counts_T)``: the iterates and the comparisons charged so far
    after each iteration.
  """
  x0_N = _oracle.validate_point("x0_N", x0_N, method.n)  # shapes (values: the eager path)
  state = method.init(x0_N, _common.check_key("key", key), eps)

  def body(s, _):
    s = method.step(s)
    return s, (s.x, s.oracle.count)

  final, (xs, counts) = jax.lax.scan(body, state, None, length=num_steps)
  return final, xs, counts


@_jit.jit_when_eager(static_argnames=("method", "monitor"), check=_check_run)
def queries_to_stationarity(method: Method, monitor: Callable[[jax.Array], jax.Array], x0_N,
                            key, eps, max_steps: int):
  r"""Runs until the evaluator's ``monitor(x) <= eps`` or ``max_steps``; jit/vmap-able.

  ``monitor`` (e.g. :math:`x\mapsto\|\nabla f(x)\|`) belongs to the experimenter; the
  method never sees it. An eager call compiles once per method and monitor object and
  shape (``max_steps`` may change). Returns ``(queries, steps, reached, x_final)``.
  """
  x0_N = _oracle.validate_point("x0_N", x0_N, method.n)  # shapes (values: the eager path)
  state = method.init(x0_N, _common.check_key("key", key), eps)

  def cond(c):
    s, t = c
    return (monitor(s.x) > eps) & (t < max_steps)

  def body(c):
    s, t = c
    return method.step(s), t + 1

  s, t = jax.lax.while_loop(cond, body, (state, jnp.zeros((), jnp.int32)))
  return s.oracle.count, t, monitor(s.x) <= eps, s.x


_METHODS = ("ours", "quantum_sim", "zhang_li")


def make_method(oracle, method: str = "ours", **kwargs) -> Method:
  """``"ours"`` / ``"quantum_sim"`` (:func:`second_order_method`) or ``"zhang_li"``."""
  if method == "ours":
    return second_order_method(oracle, estimator="classical", **kwargs)
  if method == "quantum_sim":
    return second_order_method(oracle, estimator="quantum", **kwargs)
  if method == "zhang_li":
    return zhang_li_method(oracle, **kwargs)
  raise ValueError(f"method must be one of {_METHODS}, got {method!r}")


_JIT_CACHE: dict = {}


def find_stationary_point(oracle, x0_N, key, *, eps, method: str = "ours", num_steps: int = 100,
                          **kwargs):
  r"""Runs a comparison-based method for ``num_steps`` iterations from ``x0_N``.

  Args:
    oracle: comparison oracle (the method never receives ``f``).
    x0_N: start, shape ``(n,)``, finite.
    key: PRNG key.
    eps: target :math:`\epsilon > 0` (sets the radius / step size).
    method: ``"ours"``, ``"quantum_sim"`` or ``"zhang_li"``.
    num_steps: iterations.
    **kwargs: passed to the method factory (hashable values).

  Returns:
    ``(x_N, queries, xs_TxN, counts_T)``.
  """
  x0_N = _oracle.validate_point("x0_N", x0_N, oracle.n)
  _common.check_key("key", key)
  _oracle.validate_positive("eps", eps)
  if not isinstance(num_steps, int) or num_steps < 1:
    raise ValueError(f"num_steps must be a positive int, got {num_steps!r}")
  cache_key = (oracle, method, tuple(sorted(kwargs.items())), num_steps)
  fn = _JIT_CACHE.get(cache_key)
  if fn is None:
    m = make_method(oracle, method, **kwargs)
    fn = jax.jit(lambda x0, k, e: run(m, x0, k, e, num_steps))
    _JIT_CACHE[cache_key] = fn
  final, xs, counts = fn(x0_N, key, jnp.asarray(eps, x0_N.dtype))
  return final.x, final.oracle.count, xs, counts
