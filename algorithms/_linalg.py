"""Dense linear algebra that stays safe inside replica loops on a multi-device CPU host.

``solve``, ``svd_u``, ``svd``, ``qr_q``, ``eigh`` and ``det_sign`` are ``jnp.linalg``'s with one
difference on the CPU backend: a batch (leading dimensions, or a ``vmap``
around the call) runs as a loop of single-matrix LAPACK calls instead of one
batched call. Everywhere else (GPU, TPU) they are the batched ``jnp.linalg``
calls, chosen per platform at lowering by ``jax.lax.platform_dependent``.

Why: jaxlib 0.10's CPU LAPACK kernels split a batch whose estimated cost
exceeds about 2e5 flops into chunks on XLA's intra-op thread pool and block the
calling thread until they finish (``ParallelBatchMap`` in
``jaxlib/cpu/lapack_kernels.cc``). With several CPU devices in one process (8
fake devices in our tests, or a multi-device CPU host) the devices' programs
run on that same pool; when every pool thread blocks in such a call, the chunks
never run and the process hangs. This is what stopped the ising_aggregation and
alft launchers on 8 fake devices (gdb: all device threads in
``lapack_sgetrf_ffi`` / ``lapack_sgesdd_ffi`` -> ``ParallelBatchMap``). A
batch of one never goes to the pool, so a loop of single-matrix calls cannot
hang, and each matrix gets the same LAPACK routine, so the numbers equal the
batched call's. jaxlib 0.11 compiles that parallel path out of open-source
builds; these wrappers can go when the suite requires it.

Shapes follow ``jnp.linalg``: ``a_XxNxN`` with any leading batch ``X``.
"""

from __future__ import annotations

from typing import Callable

import jax
import jax.numpy as jnp


def _per_matrix(fn: Callable, core_ndims: tuple[int, ...]) -> Callable:
  """Applies ``fn`` (written for single matrices) over leading batch dimensions.

  ``core_ndims[i]`` is the number of trailing dimensions of argument ``i`` that
  ``fn`` consumes; the leading ones (equal for all arguments) are the batch. On
  CPU the batch, and any ``vmap`` around the result, is a sequential loop.
  """
  looped = jax.custom_batching.sequential_vmap(fn)

  def over_batch(f, args):
    n_batch = jnp.ndim(args[0]) - core_ndims[0]
    for _ in range(n_batch):
      f = jax.vmap(f)
    return f(*args)

  def apply(*args):
    args = tuple(jnp.asarray(a) for a in args)
    batch = jnp.shape(args[0])[:jnp.ndim(args[0]) - core_ndims[0]]
    for a, c in zip(args, core_ndims):
      if jnp.ndim(a) < c or jnp.shape(a)[:jnp.ndim(a) - c] != batch:
        raise ValueError(f"all arguments need the batch shape {batch} before their last {c} "
                         f"dimension(s), got shape {jnp.shape(a)}")
    return jax.lax.platform_dependent(
        *args,
        cpu=lambda *xs: over_batch(looped, xs),
        default=lambda *xs: over_batch(fn, xs))

  return apply


def _solve_vec(a_NxN, b_N):
  return jnp.linalg.solve(a_NxN, b_N[:, None])[:, 0]


def _solve_mat(a_NxN, b_NxM):
  return jnp.linalg.solve(a_NxN, b_NxM)


_solve_vec_batched = _per_matrix(_solve_vec, (2, 1))
_solve_mat_batched = _per_matrix(_solve_mat, (2, 2))


def solve(a_XxNxN: jax.Array, b: jax.Array) -> jax.Array:
  """``x`` with ``a x = b``: ``b`` is ``(X, N)`` (one right-hand side) or ``(X, N, M)``."""
  a = jnp.asarray(a_XxNxN)
  b = jnp.asarray(b)
  if a.ndim < 2 or a.shape[-1] != a.shape[-2]:
    raise ValueError(f"solve needs square matrices (..., N, N), got shape {a.shape}")
  if b.ndim == a.ndim - 1 and b.shape == a.shape[:-1]:
    return _solve_vec_batched(a, b)
  if b.ndim == a.ndim and b.shape[:-1] == a.shape[:-1]:
    return _solve_mat_batched(a, b)
  raise ValueError(f"solve: b must have shape {a.shape[:-1]} or {a.shape[:-1]} + (M,), got {b.shape}")


def svd_u(x_XxMxN: jax.Array) -> jax.Array:
  """Left singular vectors ``(X, M, min(M, N))`` of the thin SVD, by descending singular value."""
  return svd(x_XxMxN)[0]


def _qr_q(x_MxN):
  return jnp.linalg.qr(x_MxN)[0]


_qr_q_batched = _per_matrix(_qr_q, (2,))


def qr_q(x_XxMxN: jax.Array) -> jax.Array:
  """The orthonormal factor ``Q`` ``(X, M, min(M, N))`` of the reduced QR decomposition."""
  if jnp.ndim(x_XxMxN) < 2:
    raise ValueError(f"qr_q needs matrices (..., M, N), got shape {jnp.shape(x_XxMxN)}")
  return _qr_q_batched(x_XxMxN)


def _eigh(x_NxN):
  return tuple(jnp.linalg.eigh(x_NxN))


_eigh_batched = _per_matrix(_eigh, (2,))


def eigh(x_XxNxN: jax.Array) -> tuple[jax.Array, jax.Array]:
  """Eigenvalues ``(X, N)`` (ascending) and eigenvectors ``(X, N, N)`` of symmetric matrices."""
  x = jnp.asarray(x_XxNxN)
  if x.ndim < 2 or x.shape[-1] != x.shape[-2]:
    raise ValueError(f"eigh needs square matrices (..., N, N), got shape {x.shape}")
  return _eigh_batched(x)


def _svd(x_MxN):
  return tuple(jnp.linalg.svd(x_MxN, full_matrices=False))


_svd_batched = _per_matrix(_svd, (2,))


def svd(x_XxMxN: jax.Array) -> tuple[jax.Array, jax.Array, jax.Array]:
  """The thin SVD ``(U (X, M, K), S (X, K), Vh (X, K, N))``, ``K = min(M, N)``, S descending."""
  if jnp.ndim(x_XxMxN) < 2:
    raise ValueError(f"svd needs matrices (..., M, N), got shape {jnp.shape(x_XxMxN)}")
  return _svd_batched(x_XxMxN)


def _det_sign(x_NxN):
  return jnp.linalg.slogdet(x_NxN)[0]


_det_sign_batched = _per_matrix(_det_sign, (2,))


def det_sign(x_XxNxN: jax.Array) -> jax.Array:
  """The sign of the determinant ``(X,)`` of square matrices (-1, 0 or +1; complex: unit phase)."""
  x = jnp.asarray(x_XxNxN)
  if x.ndim < 2 or x.shape[-1] != x.shape[-2]:
    raise ValueError(f"det_sign needs square matrices (..., N, N), got shape {x.shape}")
  return _det_sign_batched(x)
