"""Tests of algorithms.comparison_oracle: estimators, quantum simulation, optimizers, noise,
the hard chain, inputs (the experiment's sharded runs: tests/experiments/test_papers.py).

Float64 throughout (``jax.enable_x64``): comparisons of nearby values need it. The
tests are compile-bound (runs take milliseconds), so functions jitted here use XLA's
lowest backend optimisation level (``_jit``), and one compiled optimizer serves the five
3-d test functions (``lax.switch`` on a traced index).
"""

import functools
import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy import special

from reprojax.algorithms import comparison_oracle as co


def _jit(fn):
  """``jax.jit`` for code that runs once: cheaper compiles, same answers."""
  return jax.jit(fn, compiler_options={"xla_backend_optimization_level": 0})


@pytest.fixture(autouse=True)
def _x64():
  with jax.enable_x64(True):
    yield


def _angle(u, v):
  u = np.asarray(u) / np.linalg.norm(u)
  v = np.asarray(v) / np.linalg.norm(v)
  return float(np.arccos(np.clip(u @ v, -1.0, 1.0)))


def _quadratic(n, seed):
  rng = np.random.default_rng(seed)
  A = rng.normal(size=(n, n))
  A = (A + A.T) / 2
  b = rng.normal(size=n)
  return A, b, (lambda x: 0.5 * x @ jnp.asarray(A) @ x + jnp.asarray(b) @ x)


class Sealed:
  """A function value that only supports comparison: any other use raises."""

  def __init__(self, v):
    self._v = v

  def __gt__(self, other):
    return self._v > other._v

  def __lt__(self, other):
    return self._v < other._v

  def _no(self, *a, **k):
    raise TypeError("f values are sealed: only comparisons are allowed")

  __add__ = __radd__ = __sub__ = __rsub__ = __mul__ = __rmul__ = __truediv__ = _no
  __float__ = __array__ = __abs__ = __neg__ = __jax_array__ = __bool__ = __index__ = _no


def sealed(f):
  return lambda x: Sealed(f(x))


# ----------------------------------------------------------------------------- estimators

@pytest.mark.parametrize("n,delta", [(5, 1e-3), (8, 1e-5)])
def test_normalized_gradient_within_delta_at_stated_budget(n, delta):
  A, b, f = _quadratic(n, 0)
  oracle = co.make_oracle(f, n)
  bits = co.bits_for_accuracy(n, delta)
  for seed in range(3):
    x = jnp.asarray(np.random.default_rng(10 + seed).normal(size=n))
    u, st = co.normalized_gradient(oracle, co.init_state(jax.random.key(seed)), x, gamma=1e-3,
                                   bits=bits)
    g = A @ np.asarray(x) + b
    assert _angle(u, g) <= delta
    assert int(st.count) == co.gradient_queries(n, bits) == n + (n - 1) * (bits + 1)


def test_normalized_hessian_within_delta_in_frobenius():
  n, delta = 4, 1e-3
  bits = co.bits_for_accuracy(n, 1e-7)
  A, b, f = _quadratic(n, 0)
  oracle = co.make_oracle(f, n)
  for seed in range(2):
    x = jnp.asarray(np.random.default_rng(20 + seed).normal(size=n))
    H, R, g_hat, st = co.normalized_hessian(oracle, co.init_state(jax.random.key(0)), x,
                                            jax.random.key(seed), gamma=1e-3, bits=bits)
    assert np.linalg.norm(np.asarray(H) - A / np.linalg.norm(A)) <= delta
    g = A @ np.asarray(x) + b
    np.testing.assert_allclose(R, A / np.linalg.norm(g), rtol=0, atol=delta * np.abs(A).max()
                               / np.linalg.norm(g))
    assert int(st.count) == co.hessian_queries(n, bits)


# ----------------------------------------------------------------------------- quantum (simulated)

def test_statevector_is_unitary_and_returns_ancilla():
  n, N, K, B, M = 2, 4, 4, 2.0, 1.0
  A, b, f = _quadratic(n, 3)
  oracle = co.make_oracle(f, n)
  x = jnp.asarray([0.3, -0.2])
  u0 = jnp.asarray([0.6, 0.8])
  out = co.statevector_circuit(oracle, x, u0, gamma=1e-3, N=N, M=M, K=K, B=B)
  dim = N ** n * 2 ** K
  for perm in out["permutations"]:
    # A permutation of the basis is a unitary; each oracle call is also an involution.
    assert np.array_equal(np.sort(perm), np.arange(dim))
    assert np.array_equal(perm[perm], np.arange(dim))
    U = np.zeros((dim, dim))
    U[perm, np.arange(dim)] = 1.0
    np.testing.assert_allclose(U.T @ U, np.eye(dim), atol=0)
  F = np.fft.fft(np.eye(N), norm="ortho")
  np.testing.assert_allclose(F.conj().T @ F, np.eye(N), atol=1e-12)
  assert out["ancilla_leak"] < 1e-20
  assert out["queries"] == 2 * K
  np.testing.assert_allclose(out["probs"].sum(), 1.0, atol=1e-12)
  reg = co.register_distribution(oracle, x, u0, gamma=1e-3, N=N, M=M, K=K, B=B)
  np.testing.assert_allclose(out["probs"], reg, atol=1e-12)


def test_closed_form_matches_statevector_and_classical_estimate():
  n, N = 2, 128
  A, b, f = _quadratic(n, 4)
  oracle = co.make_oracle(f, n)
  x = jnp.asarray([0.4, 0.1])
  g = A @ np.asarray(x) + b
  u0 = jnp.asarray(g / np.linalg.norm(g) + np.array([0.3, -0.2]))
  u0 = u0 / jnp.linalg.norm(u0)
  w_max = np.abs(g).max() / (g @ np.asarray(u0))
  M = 0.45 * N / w_max
  B = float(np.sqrt(n) / 2 * np.linalg.norm(g) / (g @ np.asarray(u0))) + 0.5
  K = math.ceil(math.log2(2 * math.pi * M * B / 0.02))
  reg = co.register_distribution(oracle, x, u0, gamma=1e-3, N=N, M=M, K=K, B=B)
  cf = co.closed_form_distribution(oracle, x, u0, gamma=1e-3, N=N, M=M)
  assert 0.5 * np.abs(reg - cf).sum() < 0.02  # total variation
  k = np.unravel_index(np.argmax(reg), reg.shape)
  u_q = co.estimate_from_outcome(k, N, M)
  u_c, _ = co.normalized_gradient(oracle, co.init_state(jax.random.key(0)), x, gamma=1e-3,
                                  bits=20)
  # Resolution of the grid: one bin 1/M per coordinate of w, with ||w|| >= 1.
  assert _angle(u_q, u_c) <= 2 * math.sqrt(n) / M


def test_quantum_estimator_agrees_with_classical_at_log_queries():
  n, delta = 6, 1e-4
  A, b, f = _quadratic(n, 5)
  oracle = co.make_oracle(f, n)
  params = co.quantum_params(n, delta)
  for seed in range(3):
    x = jnp.asarray(np.random.default_rng(30 + seed).normal(size=n))
    u_q, st = co.quantum_normalized_gradient(oracle, co.init_state(jax.random.key(0)), x,
                                             jax.random.key(seed), delta=delta, gamma=1e-3)
    u_c, _ = co.normalized_gradient(oracle, co.init_state(jax.random.key(0)), x, gamma=1e-3,
                                    bits=co.bits_for_accuracy(n, delta))
    assert _angle(u_q, u_c) <= 2 * delta
    assert int(st.count) == params.queries
  # O(log(n/delta)): doubling n adds a constant (2 * repeats * 4 at most), not a factor.
  q = [co.quantum_params(m, delta).queries for m in (8, 16, 32, 64)]
  assert max(np.diff(q)) <= 24 and q[-1] / q[0] < 1.5


# ----------------------------------------------------------------------------- optimizer

_EPS = 1e-3
_STARTS = 2


def _problems():
  """(name, f, n, spread, offset): starts are offset + spread * N(0, I)."""
  A3 = jnp.diag(jnp.array([-1.0, 0.5, 2.0]))
  return [
      ("quadratic_quartic", co.quadratic_quartic(A3), 3, 0.8, 0.0),
      ("rosenbrock", co.rosenbrock, 3, 0.3, jnp.array([0.0, 0.5, 0.0])),
      ("octopus", co.octopus, 3, 0.02, 0.0),
      ("sparse_quadric", co.sparse_quadric(2), 3, 0.8, 0.0),
      ("skewed_quartic", co.skewed_quartic, 3, 0.8, 0.0),
      ("mlp_loss", co.mlp_loss, co.MLP_NUM_PARAMS, 0.5, 0.0),
  ]


def _starts(spread, offset, n):
  return offset + spread * jax.random.normal(jax.random.key(1), (_STARTS, n), jnp.float64)


@functools.cache
def _sealed_runs(group):
  """60 iterations of ours from every start of every function in ``group``, one compile.

  ``group`` is ``"3d"`` (the five 3-d functions, ``lax.switch`` on a traced index) or
  ``"mlp"``. The oracle holds a *sealed* f. Trust radius c_r = 10 for all (the default
  c_r = 1 runs in the noisy-oracle and quantum tests). Returns ``(names, x_BxN, counts_BxT)``.
  """
  probs = [p for p in _problems() if (p[0] == "mlp_loss") == (group == "mlp")]
  fs = [(lambda g: lambda x: g(x).astype(x.dtype))(p[1]) for p in probs]
  n = probs[0][2]

  def one(idx, x0, key):
    oracle = co.make_oracle(sealed(lambda x: jax.lax.switch(idx, fs, x)), n)
    method = co.second_order_method(oracle, gamma=1e-5, radius_scale=10.0)
    final, _, counts = co.run(method, x0, key, _EPS, 60)
    return final.x, counts

  idx = jnp.repeat(jnp.arange(len(probs)), _STARTS)
  x0 = jnp.concatenate([_starts(p[3], p[4], n) for p in probs])
  keys = jax.random.split(jax.random.key(0), len(idx))
  if group == "3d":  # cheap runs: vmapped, lowest optimisation level
    x, counts = _jit(jax.vmap(one))(idx, x0, keys)
  else:  # the MLP's runs are not cheap: optimised code (whatever tests/conftest.py sets),
    # one start at a time
    fn = jax.jit(one, compiler_options={"xla_backend_optimization_level": 3,
                                        "xla_llvm_disable_expensive_passes": False})
    x, counts = zip(*[fn(i, x, k) for i, x, k in zip(idx, x0, keys)])
  return [probs[i][0] for i in np.asarray(idx)], np.asarray(x), np.asarray(counts)


@pytest.mark.parametrize("name,f,n", [p[:3] for p in _problems()], ids=[p[0] for p in _problems()])
def test_reaches_eps_stationarity_from_comparisons_only(name, f, n):
  with pytest.raises(TypeError):  # any non-comparison use of a sealed value raises
    float(sealed(f)(jnp.ones(n)))
  names, xs, counts = _sealed_runs("mlp" if name == "mlp_loss" else "3d")
  rows = [i for i, m in enumerate(names) if m == name]
  assert len(rows) == _STARTS
  gnorm = np.linalg.norm(_jit(jax.vmap(jax.grad(f)))(jnp.asarray(xs[rows])), axis=1)
  assert np.all(gnorm <= _EPS), (name, gnorm)
  # The count is carried through jit and scan: it grows every iteration.
  assert np.all(np.diff(counts[rows], axis=1) > 0)


def test_quantum_and_baseline_reach_eps():
  A = jnp.diag(jnp.array([-1.0, 2.0]))
  f = co.quadratic_quartic(A)
  oracle = co.make_oracle(sealed(f), 2)
  gn = lambda x: jnp.linalg.norm(jax.grad(f)(x))
  x0 = jnp.array([0.5, 0.4])
  for method in (co.second_order_method(oracle, estimator="quantum"),
                 co.zhang_li_method(oracle, ell=4.0)):
    q, t, reached, _ = _jit(
        lambda x, k: co.queries_to_stationarity(method, gn, x, k, 1e-2, 5000))(
            x0, jax.random.key(0))
    assert bool(reached) and int(q) > 0, method.name


# ----------------------------------------------------------------------------- noise

def test_noisy_oracle_majority_vote_converges_with_measured_overhead():
  A = jnp.diag(jnp.array([-1.0, 2.0]))
  f = co.quadratic_quartic(A)
  gn = lambda x: jnp.linalg.norm(jax.grad(f)(x))
  x0 = jnp.array([0.5, 0.4])
  eps, p = 5e-2, 0.2
  exact = co.make_oracle(f, 2)
  votes = co.votes_for(p, num_comparisons=1e5, failure=0.05)
  noisy = co.make_oracle(f, 2, flip_prob=p, votes=votes)
  out = {}
  for name, orc in (("exact", exact), ("noisy", noisy)):
    m = co.second_order_method(orc)
    q, t, reached, _ = _jit(
        lambda k: co.queries_to_stationarity(m, gn, x0, k, eps, 200))(jax.random.key(0))
    assert bool(reached), name
    out[name] = float(q)
  overhead = out["noisy"] / out["exact"]
  # Majority voting costs `votes` repeats per comparison; iterations barely change.
  assert 0.7 * votes <= overhead <= 1.5 * votes, (overhead, votes)


def test_noise_model_flip_rates():
  """Empirical flip rates: p0 exp(-|f(x)-f(y)|/tau) per answer, Hoeffding bound after voting."""
  f = lambda x: jnp.sum(x)
  x = jnp.array([[0.0], [0.0], [0.0]])
  y = jnp.array([[-0.5], [-2.0], [-10.0]])  # f(x) > f(y) always; gaps 0.5, 2, 10
  p0, tau, T = 0.4, 1.0, 4000
  for votes in (1, 9):
    orc = co.make_oracle(f, 1, flip_prob=p0, flip_scale=tau, votes=votes)
    bits, st = _jit(jax.vmap(lambda k: co.compare(orc, co.init_state(k), x, y)))(
        jax.random.split(jax.random.key(0), T))
    wrong = 1.0 - np.asarray(bits).mean(axis=0)
    p = p0 * np.exp(-np.array([0.5, 2.0, 10.0]) / tau)
    if votes == 1:
      np.testing.assert_allclose(wrong, p, atol=4 * np.sqrt(0.25 / T))
    else:
      assert np.all(wrong <= np.exp(-2 * votes * (0.5 - p) ** 2) + 4 * np.sqrt(0.25 / T))
    assert np.all(np.asarray(st.count) == 3 * votes)


# ----------------------------------------------------------------------------- hard chain

def test_hard_chain_properties():
  """Carmon et al.'s chain: zero-chain support, ||grad|| > 1 while |x_T| < 1, gap <= 12 T,
  Lipschitz constants, and the scaling that puts a chain of T links at a given eps."""
  n, T = 6, 4
  f = lambda x, t: co.chain(x, t)
  grad = _jit(jax.vmap(jax.grad(f), (0, None)))
  rng = np.random.default_rng(0)
  # Masked links equal the explicit sum over links 2..T (T traced, one compile).
  psi = lambda t: np.where(t > 0.5, np.exp(1 - 1 / np.where(t > 0.5, 2 * t - 1, 1.0) ** 2), 0.0)
  phi = lambda t: np.sqrt(np.e * np.pi / 2) * special.erfc(-t / np.sqrt(2))
  X = rng.uniform(-2, 2, (3, n))
  want = -phi(X[:, 0]) + sum(psi(-X[:, i - 1]) * phi(-X[:, i]) - psi(X[:, i - 1]) * phi(X[:, i])
                             for i in range(1, T))
  value = _jit(jax.vmap(f, (0, None)))
  np.testing.assert_allclose(value(jnp.asarray(X), T), want, rtol=1e-12)
  # Zero chain: with x_j = 0 past k, the gradient vanishes past k + 1 (and past T).
  X = np.zeros((3, n))
  X[:, :2] = rng.uniform(-2, 2, (3, 2))
  g = np.asarray(grad(jnp.asarray(X), T))
  assert np.all(g[:, 3:] == 0.0) and np.all(np.abs(g[:, 0]) > 0)
  # ||grad|| > 1 whenever |x_T| < 1.
  X = rng.uniform(-3, 3, (2000, n))
  X[:, T - 1] = rng.uniform(-1, 1, 2000)
  assert np.linalg.norm(np.asarray(grad(jnp.asarray(X), T)), axis=1).min() > 1.0
  # Gap: f(0) - f(x) <= 12 T (the infimum is approached as all x_i -> +inf).
  f0, f_inf = value(jnp.stack([jnp.zeros(n), jnp.full(n, 10.0)]), T)
  assert 0.0 < float(f0 - f_inf) <= co.CHAIN_GAP_PER_LINK * T
  # Lipschitz constants: sampled |D^2 f[v, v]| <= l_1 and |D^3 f[v, v, v]| <= l_2.
  d2 = lambda x, v: jax.jvp(lambda y: jax.jvp(lambda z: f(z, T), (y,), (v,))[1], (x,), (v,))[1]
  d3 = lambda x, v: jax.jvp(lambda y: d2(y, v), (x,), (v,))[1]
  X = jnp.asarray(rng.uniform(-2.5, 2.5, (4000, n)))
  V = rng.normal(size=(4000, n))
  V = jnp.asarray(V / np.linalg.norm(V, axis=1, keepdims=True))
  assert float(jnp.abs(_jit(jax.vmap(d2))(X, V)).max()) <= co.CHAIN_LIPSCHITZ[1]
  assert float(jnp.abs(_jit(jax.vmap(d3))(X, V)).max()) <= co.CHAIN_LIPSCHITZ[2]
  # Scaling: gap budget spent, ||grad f|| = eps ||grad f_T(x / sigma)||, T ~ eps^-(p+1)/p.
  for order, lip in ((1, 5.0), (2, 1.0)):
    eps, sigma, scale = co.hard_chain_params(jnp.array([2.0, 16.0]), order, 1.0, lip)
    np.testing.assert_allclose(12 * np.array([2.0, 16.0]) * scale, 1.0, rtol=1e-12)
    np.testing.assert_allclose(np.log(8.0) / np.log(eps[0] / eps[1]), (order + 1) / order,
                               rtol=1e-12)
    X = jnp.asarray(rng.normal(size=(3, n)))
    gs = _jit(jax.vmap(jax.grad(co.hard_chain(16, sigma[1], scale[1]))))(X)
    np.testing.assert_allclose(gs, eps[1] * grad(X / sigma[1], 16), rtol=1e-10)


# ----------------------------------------------------------------------------- bad input

def test_bad_inputs_raise_value_error():
  f = co.quadratic_quartic(jnp.eye(2))
  oracle = co.make_oracle(f, 2)
  key = jax.random.key(0)
  for eps in (0.0, -1e-3, float("nan")):
    with pytest.raises(ValueError, match="eps"):
      co.find_stationary_point(oracle, jnp.ones(2), key, eps=eps)
  with pytest.raises(ValueError, match="scalar"):
    co.make_oracle(lambda x: x ** 2, 2)
  for bad_x in (jnp.array([jnp.nan, 1.0]), jnp.array([1.0, jnp.inf])):
    with pytest.raises(ValueError, match="finite"):
      co.find_stationary_point(oracle, bad_x, key, eps=1e-3)
    with pytest.raises(ValueError, match="finite"):
      co.normalized_gradient(oracle, co.init_state(key), bad_x, gamma=1e-3, bits=4)
  with pytest.raises(ValueError, match="shape"):
    co.normalized_gradient(oracle, co.init_state(key), jnp.ones(3), gamma=1e-3, bits=4)
  for p in (-0.1, 0.5, 0.7, float("nan")):
    with pytest.raises(ValueError, match="flip_prob"):
      co.make_oracle(f, 2, flip_prob=p)
  with pytest.raises(ValueError, match="votes"):
    co.make_oracle(f, 2, flip_prob=0.1, votes=2)
  with pytest.raises(ValueError, match="gamma"):
    co.normalized_gradient(oracle, co.init_state(key), jnp.ones(2), gamma=0.0, bits=4)
  with pytest.raises(ValueError, match="exact"):
    co.quantum_normalized_gradient(co.make_oracle(f, 2, flip_prob=0.1), co.init_state(key),
                                   jnp.ones(2), key, delta=0.1, gamma=1e-3)
  with pytest.raises(ValueError, match="order"):
    co.hard_chain_params(4, 3, 1.0, 1.0)
  with pytest.raises(ValueError, match="gap"):
    co.hard_chain_params(4, 2, -1.0, 1.0)
  with pytest.raises(ValueError, match="num_links"):
    co.hard_chain_params(np.array([2, 0]), 2, 1.0, 1.0)
  with pytest.raises(ValueError, match="method"):
    co.find_stationary_point(oracle, jnp.ones(2), key, eps=1e-3, method="newton")
