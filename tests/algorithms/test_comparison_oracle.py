"""Tests of algorithms.comparison_oracle: estimators, quantum simulation, optimizers, noise, inputs.

Float64 throughout (``jax.enable_x64``): comparisons of nearby values need it.
"""

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from algorithms import comparison_oracle as co


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


def _problems():
  A3 = jnp.diag(jnp.array([-1.0, 0.5, 2.0]))
  return [
      ("quadratic_quartic", co.quadratic_quartic(A3), 3, 0.8, {}),
      ("rosenbrock", co.rosenbrock, 2, 0.3, {"radius_scale": 10.0}),
      ("octopus", co.octopus, 3, 0.02, {"radius_scale": 10.0}),
      ("sparse_quadric", co.sparse_quadric(2), 4, 0.8, {}),
      ("skewed_quartic", co.skewed_quartic, 3, 0.8, {}),
      ("mlp_loss", co.mlp_loss, co.MLP_NUM_PARAMS, 0.5, {"radius_scale": 10.0}),
  ]


@pytest.mark.parametrize("name,f,n,spread,kw", _problems(), ids=[p[0] for p in _problems()])
def test_reaches_eps_stationarity_from_comparisons_only(name, f, n, spread, kw):
  oracle = co.make_oracle(sealed(f), n)  # any non-comparison use of f raises
  with pytest.raises(TypeError):
    float(sealed(f)(jnp.ones(n)))
  starts = spread * jax.random.normal(jax.random.key(1), (2, n), jnp.float64)
  if name == "rosenbrock":
    starts = starts + jnp.array([0.0, 0.5])
  for i in range(starts.shape[0]):
    x, queries, _, counts = co.find_stationary_point(oracle, starts[i], jax.random.key(i),
                                                     eps=_EPS, num_steps=60, gamma=1e-5, **kw)
    gnorm = float(jnp.linalg.norm(jax.grad(f)(x)))
    assert gnorm <= _EPS, (name, i, gnorm)
    # The count is carried through jit and scan: it grows every iteration.
    assert np.all(np.diff(np.asarray(counts)) > 0) and int(queries) == int(counts[-1])


def test_quantum_and_baseline_reach_eps():
  A = jnp.diag(jnp.array([-1.0, 2.0]))
  f = co.quadratic_quartic(A)
  oracle = co.make_oracle(sealed(f), 2)
  gn = lambda x: jnp.linalg.norm(jax.grad(f)(x))
  x0 = jnp.array([0.5, 0.4])
  for method in (co.second_order_method(oracle, estimator="quantum"),
                 co.zhang_li_method(oracle, ell=4.0)):
    q, t, reached, _ = jax.jit(
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
    q, t, reached, _ = jax.jit(
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
    bits, st = jax.jit(jax.vmap(lambda k: co.compare(orc, co.init_state(k), x, y)))(
        jax.random.split(jax.random.key(0), T))
    wrong = 1.0 - np.asarray(bits).mean(axis=0)
    p = p0 * np.exp(-np.array([0.5, 2.0, 10.0]) / tau)
    if votes == 1:
      np.testing.assert_allclose(wrong, p, atol=4 * np.sqrt(0.25 / T))
    else:
      assert np.all(wrong <= np.exp(-2 * votes * (0.5 - p) ** 2) + 4 * np.sqrt(0.25 / T))
    assert np.all(np.asarray(st.count) == 3 * votes)


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
  with pytest.raises(ValueError, match="method"):
    co.find_stationary_point(oracle, jnp.ones(2), key, eps=1e-3, method="newton")
