r"""Quantum normalized-gradient estimation from a superposed comparison oracle: SIMULATED CLASSICALLY.

Nothing here runs on a quantum computer. We simulate, on a classical machine,
a quantum algorithm that queries the comparison oracle in superposition, and we
charge it the number of *quantum* queries the circuit makes. Three simulations:

* :func:`statevector_circuit`: a dense statevector over the grid register
  :math:`|z\rangle` *and* the ancilla register of the coherent binary search;
  every oracle call is applied as the permutation unitary
  :math:`U|z, b\rangle = |z, b \oplus O_f(\cdot)\rangle` (tiny sizes only; its
  unitarity is tested).
* :func:`register_distribution`: the same circuit with the ancilla traced out
  analytically (it returns to :math:`|0\rangle` after uncomputation, which the
  dense version checks), i.e. the exact output distribution of the grid register.
* the closed form used by :func:`quantum_normalized_gradient` for larger ``n``:
  the product of Fejér kernels obtained when the computed phase is exactly linear
  (derived below). It is tested against :func:`register_distribution` where both run.

The circuit (Jordan's gradient algorithm driven by comparisons). Let
:math:`g = \nabla f(x)`.

1. *Reference direction* (classical, :math:`2m-1` queries): draw :math:`m` random
   unit :math:`u_j`, fix signs so :math:`g^\top u_j > 0` (test :math:`v = u_j`), and keep
   the largest :math:`g^\top u_j` by a tournament (test :math:`v = u_a - u_b`). For
   :math:`u` uniform on the sphere :math:`P(\hat g^\top u < a/\sqrt n) \lesssim a\sqrt{2/\pi}`,
   so with :math:`m = 8, a = 1/4` the kept :math:`u_0` has :math:`\hat g^\top u_0 \ge a/\sqrt n`
   except with probability :math:`< 10^{-5}`.
2. *Grid superposition*: :math:`N^{-n/2}\sum_z |z\rangle`, :math:`z \in \{0..N-1\}^n`,
   :math:`\zeta = (z - N/2)/N \in [-\tfrac12, \tfrac12)^n`.
3. *Coherent binary search* (:math:`K` queries): the test
   :math:`O_f(x + \gamma(\zeta - t u_0), x - \gamma(\zeta - t u_0)) = \mathbb 1[r(\zeta) > t]`,
   with :math:`r(\zeta) = g^\top\zeta / g^\top u_0 = w^\top\zeta`, :math:`w = g/(g^\top u_0)`,
   bisects :math:`t \in [-B, B]`, writing one answer bit per step into the ancilla. With
   :math:`\|w\| \le \sqrt n/a` and :math:`\|\zeta\| \le \sqrt n/2`, :math:`B = n/(2a)` covers the range.
4. *Phase* :math:`e^{2\pi i M \tilde r}` on the computed value (no query), then
   *uncompute* the search (:math:`K` more queries), leaving
   :math:`N^{-n/2}\sum_z e^{2\pi i M\tilde r(\zeta)}|z\rangle`.
5. *Inverse QFT* on every coordinate and measure :math:`k`.

Closed form. If :math:`\tilde r = w^\top\zeta` exactly, the state is
:math:`\bigotimes_i N^{-1/2}\sum_{z_i} e^{2\pi i c_i z_i / N}` up to a global phase, with
:math:`c_i = M w_i`, and the QFT gives independent coordinates with

.. math:: P(k_i) = \Big(\frac{\sin \pi(c_i - k_i)}{N \sin(\pi (c_i-k_i)/N)}\Big)^2,

the phase-estimation kernel: :math:`P(|k_i - c_i| > 2^e) \le 1/(2(2^e-2))`. The
binary search quantises :math:`r` to :math:`B 2^{-K}`; this moves the phase by
at most :math:`2\pi M B 2^{-K}`, which we keep below 0.05 rad by
:math:`K = \lceil\log_2(2\pi M B / 0.05)\rceil` (the only approximation of the closed
form, besides sampling the kernel's mass beyond :math:`|k-c| > L`, below :math:`2/(\pi^2 L)`,
from its :math:`1/(\pi^2\Delta^2)` envelope: see :func:`sample_closed_form`).

Accuracy. :math:`\hat w_i = k_i/M`. With :math:`M = 2^e\sqrt n/\delta` every coordinate
is within :math:`\delta/\sqrt n` with probability :math:`\ge 1 - 1/(2(2^e-2))`;
:math:`e = \lceil\log_2 n\rceil + 3` and a coordinate-wise median of ``repeats = 3`` runs
make all coordinates right with high probability. Since :math:`\|w\| \ge 1`,
:math:`\angle(\hat w, g) \lesssim \delta`. Wrap-around needs :math:`N \ge 2 M \sqrt n / a`.

Queries: :math:`2m - 1 + 2 \cdot\text{repeats}\cdot K` with
:math:`K = O(\log(n/\delta))`: the :math:`O(\log(n/\delta))` of Tao et al. (our
circuit is our own construction reaching that order, not a transcription of theirs).

References:
  S. P. Jordan, "Fast quantum algorithm for numerical gradient estimation", PRL 95 (2005);
  Tao, Zhang, Wang, Zhang & Li, "Gradient Testing and Estimation by Comparisons" (2024/2026);
  Wang, Zhang, Tao, Zhang & Li, "Finding Stationary Points by Comparisons" (ICML 2026).
"""

from __future__ import annotations

import functools
import math
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from reprojax.algorithms import _common
from reprojax.algorithms.comparison_oracle import _jit
from reprojax.algorithms.comparison_oracle import _oracle


class QuantumParams(NamedTuple):
  """Static sizes of the simulated circuit (hashable)."""

  n: int
  N: int  # grid points per coordinate (2**qubits)
  M: float  # phase multiplier
  K: int  # depth of the coherent binary search (queries per compute pass)
  B: float  # binary-search range [-B, B] for r(zeta)
  m_ref: int = 8  # random reference candidates
  repeats: int = 3  # independent runs, coordinate-wise median
  window: int = 16  # closed form: exact kernel for |k - c| <= window, 1/Delta^2 tail beyond

  @property
  def queries(self) -> int:
    """Queries per call: 2 m_ref - 1 classical + 2 K per run."""
    return 2 * self.m_ref - 1 + 2 * self.K * self.repeats


def quantum_params(n: int, delta: float, *, a: float = 0.25, extra_bits: int | None = None,
                   repeats: int = 3, m_ref: int = 8, phase_error: float = 0.05) -> QuantumParams:
  """Circuit sizes for angle accuracy ``delta`` in dimension ``n`` (see module docstring)."""
  if not (isinstance(n, (int, np.integer)) and n >= 1):
    raise ValueError(f"n must be a positive int, got {n!r}")
  if not (0 < delta < 1):
    raise ValueError(f"delta must be in (0, 1), got {delta}")
  e = (math.ceil(math.log2(max(n, 1))) + 3) if extra_bits is None else int(extra_bits)
  M = (2 ** e) * math.sqrt(n) / delta
  W = math.sqrt(n) / a
  N = 1 << math.ceil(math.log2(2 * M * W))
  B = n / (2 * a)
  K = math.ceil(math.log2(2 * math.pi * M * B / phase_error))
  return QuantumParams(n=int(n), N=int(N), M=float(M), K=int(K), B=float(B), m_ref=m_ref,
                       repeats=repeats)


def _reference(oracle, state, x_N, z_MxN, gamma, m_ref):
  """Classical choice of u0 with large g.u0 > 0 (2 m_ref - 1 charged queries); z: normals."""
  u_MxN = z_MxN
  u_MxN = u_MxN / jnp.linalg.norm(u_MxN, axis=1, keepdims=True)
  pos, state = _oracle.compare(oracle, state, x_N + gamma * u_MxN, x_N - gamma * u_MxN)
  u_MxN = jnp.where(pos[:, None], u_MxN, -u_MxN)

  def body(j, carry):
    best, st = carry
    d = u_MxN[best] - u_MxN[j]
    bit, st = _oracle.compare(oracle, st, (x_N + gamma * d)[None], (x_N - gamma * d)[None])
    return jnp.where(bit[0], best, j), st  # bit: g.u_best > g.u_j

  best, state = jax.lax.fori_loop(1, m_ref, body, (jnp.zeros((), jnp.int32), state))
  return u_MxN[best], state


@_jit.jit_when_eager(static_argnames=("oracle", "K"))
def _coherent_search(oracle, x_N, u0_N, zeta_GxN, gamma, B, K):
  """The value r~(zeta) the K-step coherent binary search writes (simulator side, uncharged)."""
  G = zeta_GxN.shape[0]
  dummy = _oracle.init_state(jax.random.key(0))

  def body(_, carry):
    lo, hi = carry
    t = 0.5 * (lo + hi)
    d = zeta_GxN - t[:, None] * u0_N[None, :]
    bit, _ = _oracle.compare(oracle, dummy, x_N + gamma * d, x_N - gamma * d)
    return jnp.where(bit, t, lo), jnp.where(bit, hi, t)

  lo = jnp.full((G,), -B, x_N.dtype)
  hi = jnp.full((G,), B, x_N.dtype)
  lo, hi = jax.lax.fori_loop(0, K, body, (lo, hi))
  return 0.5 * (lo + hi)


def _fejer(delta_L, N):
  s = jnp.sin(jnp.pi * delta_L / N)
  safe = jnp.where(jnp.abs(s) < 1e-12, 1.0, s)
  val = (jnp.sin(jnp.pi * delta_L) / (N * safe)) ** 2
  return jnp.where(jnp.abs(s) < 1e-12, 1.0, val)


def closed_form_kernel(c_N, params: QuantumParams):
  """Per-coordinate outcome probabilities on the window around round(c): ((n, 2L+1), offsets)."""
  L = params.window
  j = jnp.arange(-L, L + 1)
  base = jnp.round(c_N)
  k_NxJ = base[:, None] + j[None, :]
  p = _fejer(c_N[:, None] - k_NxJ, params.N)
  return p / jnp.sum(p, axis=1, keepdims=True), k_NxJ


def sample_closed_form(u_4xRxN, c_N, params: QuantumParams):
  r"""``repeats`` outcomes per coordinate from the kernel centred at ``c_N`` (signed integers).

  Inside the window :math:`|k-c|\le L` the exact kernel is used (inverse CDF); the
  remaining mass :math:`1-\sum_{|k-c|\le L}P(k)` (:math:`< 2/(\pi^2 L)`) is sampled from
  its large-offset form :math:`P(c+\Delta)\approx 1/(2\pi^2\Delta^2)` (average of
  :math:`\sin^2`), i.e. :math:`|\Delta| = (L+\tfrac12)/U`, random sign. ``u_4xRxN`` holds
  uniforms in (0, 1) (one PRNG call for the whole simulation keeps compiles short).
  """
  L = params.window
  j = jnp.arange(-L, L + 1)
  base = jnp.round(c_N)
  k_NxJ = base[:, None] + j[None, :]
  p = _fejer(c_N[:, None] - k_NxJ, params.N)  # exact values; sum <= 1
  inside = jnp.minimum(jnp.sum(p, axis=1), 1.0)  # (n,)
  cdf = jnp.cumsum(p / jnp.sum(p, axis=1, keepdims=True), axis=1)  # (n, 2L+1)
  idx = jnp.sum(cdf[None] < u_4xRxN[0][..., None], axis=-1)
  idx = jnp.minimum(idx, 2 * L)
  k_in = base[None] + idx - L
  sgn = jnp.where(u_4xRxN[2] < 0.5, 1.0, -1.0)
  k_out = jnp.round(c_N[None] + sgn * (L + 0.5) / u_4xRxN[1])
  tail = u_4xRxN[3] > inside[None]
  return jnp.where(tail, k_out, k_in)


def _wrap(k, N):
  return jnp.mod(k + N // 2, N) - N // 2


def _quantum_core(oracle, state, x_N, key, gamma, params: QuantumParams):
  """Closed-form simulation of one call: returns (unit vector, state charged params.queries)."""
  n = x_N.shape[0]
  m, R = params.m_ref, params.repeats
  # One PRNG call: 2 m n uniforms for Box-Muller normals, 4 R n for the measurement.
  u = jax.random.uniform(key, (2 * m * n + 4 * R * n,), x_N.dtype, minval=1e-12, maxval=1.0)
  u1, u2 = u[:m * n].reshape(m, n), u[m * n:2 * m * n].reshape(m, n)
  z_MxN = jnp.sqrt(-2.0 * jnp.log(u1)) * jnp.cos(2.0 * jnp.pi * u2)
  count0 = state.count
  u0, state = _reference(oracle, state, x_N, z_MxN, gamma, m)
  # Simulator: the exact slope w_i = r(e_i) by a long (uncharged) classical bisection.
  rng = 2.0 * max(params.B, math.sqrt(n) / 0.25)
  w_N = _coherent_search(oracle, x_N, u0, jnp.eye(n, dtype=x_N.dtype), gamma, rng, 60)
  c_N = params.M * w_N
  k_RxN = sample_closed_form(u[2 * m * n:].reshape(4, R, n), c_N, params)
  k_RxN = _wrap(k_RxN, params.N)
  w_hat = jnp.median(k_RxN, axis=0) / params.M
  nrm = jnp.linalg.norm(w_hat)
  u = jnp.where(nrm > 0, w_hat / jnp.where(nrm > 0, nrm, 1.0), u0)
  state = state._replace(count=count0 + params.queries * oracle.votes)
  return u, state


@functools.partial(jax.jit, static_argnames=("oracle", "params"))
def _quantum_jit(oracle, state, x_N, key, gamma, params):
  return _quantum_core(oracle, state, x_N, key, gamma, params)


def _check_exact(oracle):
  if not oracle.exact:
    raise ValueError("the quantum simulation assumes an exact oracle (flip_prob = 0); "
                     f"got flip_prob={oracle.flip_prob}")


def quantum_normalized_gradient(oracle, state, x_N, key, *, delta: float, gamma,
                                params: QuantumParams | None = None):
  r"""Quantum estimate of :math:`\nabla f(x)/\|\nabla f(x)\|`, SIMULATED CLASSICALLY (closed form).

  Args:
    oracle: exact comparison oracle (static).
    state: oracle state; charged ``params.queries`` quantum + classical queries.
    x_N: point, shape ``(n,)``.
    key: PRNG key for the measurement outcomes and the reference directions.
    delta: target angle accuracy in (0, 1).
    gamma: finite-difference radius.
    params: circuit sizes (default ``quantum_params(n, delta)``).

  Returns:
    ``(u_N, state)``.
  """
  _check_exact(oracle)
  x_N = _oracle.validate_point("x_N", x_N, oracle.n)
  _common.check_key("key", key)
  _oracle.validate_positive("gamma", gamma)
  if not 0 < delta < 1:
    raise ValueError(f"delta must be in (0, 1), got {delta}")
  params = params or quantum_params(oracle.n, delta)
  return _quantum_jit(oracle, state, x_N, key, jnp.asarray(gamma, x_N.dtype), params)


def _check_batch(arguments) -> None:
  arguments["x_BxN"] = _oracle.validate_point("x_BxN", arguments["x_BxN"], arguments["oracle"].n,
                                              batch=True)


@_jit.jit_when_eager(static_argnames=("oracle", "params"), check=_check_batch)
def quantum_gradient_batch(oracle, state, x_BxN, gamma, params: QuantumParams):
  """:func:`quantum_normalized_gradient` (closed-form simulation) at ``B`` points at once.

  Each point gets its own key (split from ``state.key``); the state is charged
  ``B * params.queries``. Shapes are checked; values are not (it is meant to run
  inside ``jit``/``vmap``; eager calls compile once per oracle, params and shape).

  Args:
    oracle: exact comparison oracle (static).
    state: oracle state.
    x_BxN: the points, shape ``(B, n)``.
    gamma: finite-difference radius.
    params: circuit sizes (:func:`quantum_params`, static).

  Returns:
    ``(u_BxN, state)``.
  """
  _check_exact(oracle)
  x_BxN = _oracle.validate_point("x_BxN", x_BxN, oracle.n, batch=True)
  if params.n != oracle.n:
    raise ValueError(f"params.n must be the oracle's dimension {oracle.n}, got {params.n}")
  B = x_BxN.shape[0]
  key, sub = jax.random.split(state.key)
  keys = jax.random.split(sub, B)
  states = _oracle.OracleState(count=jnp.zeros((B,), jnp.int32), key=keys)
  u, st = jax.vmap(lambda s, x, k: _quantum_core(oracle, s, x, k, gamma, params))(
      states, x_BxN, keys)
  return u, _oracle.OracleState(count=state.count + jnp.sum(st.count, dtype=jnp.int32), key=key)


# ----------------------------------------------------------------------------- statevector

def _grid(n, N, dtype):
  z = np.stack(np.meshgrid(*([np.arange(N)] * n), indexing="ij"), -1).reshape(-1, n)
  return z, jnp.asarray((z - N / 2) / N, dtype)


def _check_circuit(oracle, x_N, u0_N, gamma, N, M, K=1, B=1.0):
  """ValueError unless the simulator's inputs are valid (host-side functions below)."""
  x_N = _oracle.validate_point("x_N", x_N, oracle.n)
  u0_N = _oracle.validate_point("u0_N", u0_N, oracle.n)
  _oracle.validate_positive("gamma", gamma)
  if isinstance(N, bool) or not isinstance(N, (int, np.integer)) or N < 2:
    raise ValueError(f"N (grid points per coordinate) must be an int >= 2, got {N!r}")
  if isinstance(K, bool) or not isinstance(K, (int, np.integer)) or K < 1:
    raise ValueError(f"K (binary-search depth) must be an int >= 1, got {K!r}")
  for name, v in (("M", M), ("B", B)):
    if not (np.ndim(v) == 0 and np.isfinite(v) and v > 0):
      raise ValueError(f"{name} must be a finite scalar > 0, got {v!r}")
  return x_N, u0_N


def register_distribution(oracle, x_N, u0_N, *, gamma, N: int, M: float, K: int, B: float):
  r"""Exact outcome distribution of the grid register, shape ``(N,)*n`` (ancilla traced out).

  The amplitude after uncomputation is :math:`N^{-n/2} e^{2\pi i M \tilde r(\zeta(z))}` with
  :math:`\tilde r` the value the coherent search writes (computed by emulating it on
  every basis state); the QFT is ``numpy.fft.fftn(..., norm="ortho")``. Host-side (numpy
  output); the emulated search is one compiled program per oracle, ``K`` and shape.
  """
  x_N, u0_N = _check_circuit(oracle, x_N, u0_N, gamma, N, M, K, B)
  n = x_N.shape[0]
  if N ** n > 2 ** 22:
    raise ValueError(f"statevector too large: N**n = {N}**{n} > 2**22")
  _, zeta = _grid(n, N, x_N.dtype)
  r = np.asarray(_coherent_search(oracle, x_N, u0_N, zeta, gamma, B, K), np.float64)
  amp = np.exp(2j * np.pi * M * r).reshape((N,) * n) / math.sqrt(N ** n)
  out = np.fft.fftn(amp, norm="ortho")
  return np.abs(out) ** 2


def closed_form_distribution(oracle, x_N, u0_N, *, gamma, N: int, M: float):
  r"""The product-of-Fejér-kernels distribution, shape ``(N,)*n``, for comparison.

  Coordinates are independent with :math:`P(k_i) \propto` the phase-estimation kernel at
  :math:`c_i = M w_i` (module docstring), ``w`` found by a 60-step emulated search. Host-side.
  """
  x_N, u0_N = _check_circuit(oracle, x_N, u0_N, gamma, N, M)
  n = x_N.shape[0]
  w = np.asarray(_coherent_search(oracle, x_N, u0_N, jnp.eye(n, dtype=x_N.dtype), gamma,
                                  4.0 * math.sqrt(n) * N, 60), np.float64)
  k = np.arange(N)
  dist = np.ones(())
  for i in range(n):
    delta = M * w[i] - k
    sn = np.sin(np.pi * delta / N)
    tiny = np.abs(sn) < 1e-12
    p = np.where(tiny, 1.0, (np.sin(np.pi * delta) / (N * np.where(tiny, 1.0, sn))) ** 2)
    # The kernel is N-periodic in (c - k): the distribution of k mod N.
    dist = np.multiply.outer(dist, p / p.sum())
  return dist


def statevector_circuit(oracle, x_N, u0_N, *, gamma, N: int, M: float, K: int, B: float):
  """Dense statevector of grid (N**n) x ancilla (2**K) through the whole circuit (tiny sizes).

  Returns a dict: ``probs`` (outcomes of the grid register, shape ``(N,)*n``),
  ``ancilla_leak`` (mass left off ``|0>`` of the ancilla after uncomputation, should
  be 0), ``queries`` (``2K`` superposed oracle calls) and ``permutations`` (the
  ``K`` oracle calls as index permutations of the basis, so a test can check that
  each is a bijection, i.e. a unitary). Host-side (numpy).
  """
  x_N, u0_N = _check_circuit(oracle, x_N, u0_N, gamma, N, M, K, B)
  n = x_N.shape[0]
  G, A = N ** n, 2 ** K
  if G * A > 2 ** 20:
    raise ValueError(f"dense statevector too large: {G} x {A} > 2**20")
  _, zeta = _grid(n, N, x_N.dtype)
  anc = np.arange(A)
  bits_AxK = (anc[:, None] >> np.arange(K)[None, :]) & 1

  def interval(prefix_len):
    lo = np.full((A,), -B)
    hi = np.full((A,), B)
    for j in range(prefix_len):
      m = 0.5 * (lo + hi)
      lo, hi = np.where(bits_AxK[:, j] == 1, m, lo), np.where(bits_AxK[:, j] == 1, hi, m)
    return lo, hi

  dummy = _oracle.init_state(jax.random.key(0))
  perms = []
  for k in range(K):
    lo, hi = interval(k)
    t_A = jnp.asarray(0.5 * (lo + hi), x_N.dtype)
    d = zeta[:, None, :] - t_A[None, :, None] * u0_N[None, None, :]
    d = d.reshape(G * A, n)
    c, _ = _oracle.compare(oracle, dummy, x_N + gamma * d, x_N - gamma * d)
    c = np.asarray(c).reshape(G, A).astype(np.int64)
    idx = np.arange(G * A).reshape(G, A)
    perms.append((idx ^ (c << k)).reshape(-1))  # flip ancilla bit k where the answer is 1
  lo, hi = interval(K)
  r_A = 0.5 * (lo + hi)

  psi = np.zeros((G, A), np.complex128)
  psi[:, 0] = 1.0 / math.sqrt(G)  # Hadamards on the grid register
  psi = psi.reshape(-1)

  def apply(perm, v):
    out = np.empty_like(v)
    out[perm] = v
    return out

  for p in perms:  # compute
    psi = apply(p, psi)
  psi = (psi.reshape(G, A) * np.exp(2j * np.pi * M * r_A)[None, :]).reshape(-1)  # phase
  for p in reversed(perms):  # uncompute (each call is an involution)
    psi = apply(p, psi)
  psi = psi.reshape(G, A)
  leak = float(np.sum(np.abs(psi[:, 1:]) ** 2))
  grid = psi[:, 0].reshape((N,) * n)
  out = np.fft.fftn(grid, norm="ortho")
  return {"probs": np.abs(out) ** 2, "ancilla_leak": leak, "queries": 2 * K,
          "permutations": perms}


def estimate_from_outcome(k_N, N: int, M: float):
  r"""Decodes a measured outcome ``k`` (in 0..N-1 per coordinate) to a unit vector.

  :math:`\hat w_i = \tilde k_i / M` with :math:`\tilde k_i` the signed (wrapped) outcome;
  returns :math:`\hat w/\|\hat w\|`. Host-side (numpy).
  """
  k = np.asarray(k_N)
  if k.ndim != 1 or k.size < 1 or not np.issubdtype(k.dtype, np.integer):
    raise ValueError(f"k_N must be a non-empty 1-D integer array, got {k.dtype} shape {k.shape}")
  if isinstance(N, bool) or not isinstance(N, (int, np.integer)) or N < 2:
    raise ValueError(f"N must be an int >= 2, got {N!r}")
  if np.any((k < 0) | (k >= N)):
    raise ValueError(f"k_N entries must lie in [0, {N}), got min {k.min()} max {k.max()}")
  if not (np.ndim(M) == 0 and np.isfinite(M) and M > 0):
    raise ValueError(f"M must be a finite scalar > 0, got {M!r}")
  ks = np.mod(k + N // 2, N) - N // 2
  if not np.any(ks):
    raise ValueError("k_N decodes to the zero vector (every outcome 0): no direction")
  w = ks / M
  return w / np.linalg.norm(w)
