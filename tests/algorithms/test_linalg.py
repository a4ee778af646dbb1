"""algorithms._linalg: jnp.linalg's numbers, with no batched LAPACK call on CPU (the 8-device hang)."""

import re

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from reprojax.algorithms import _linalg


def _spd(key, shape):
  a = jax.random.normal(key, shape)
  return a @ jnp.swapaxes(a, -1, -2) + shape[-1] * jnp.eye(shape[-1])


def _lapack_calls(hlo: str):
  """(target, operand shape) of every LAPACK custom call in a compiled CPU module."""
  calls = []
  for line in hlo.splitlines():
    m = re.search(r'custom_call_target="(lapack_\w+)"', line)
    if m:
      shape = re.search(r"operand_layout_constraints=\{\w+\[([\d,]*)\]", line)
      calls.append((m.group(1), tuple(int(d) for d in shape.group(1).split(",") if d)))
  return calls


def test_equal_to_jnp_linalg_batched_and_vmapped():
  k1, k2, k3 = jax.random.split(jax.random.key(0), 3)
  a = _spd(k1, (3, 4, 6, 6))
  b = jax.random.normal(k2, (3, 4, 6))
  bm = jax.random.normal(k3, (3, 4, 6, 2))
  want = jnp.linalg.solve(a, b[..., None])[..., 0]
  np.testing.assert_array_equal(jax.jit(_linalg.solve)(a, b), want)
  np.testing.assert_array_equal(jax.jit(jax.vmap(_linalg.solve))(a, b), want)
  np.testing.assert_array_equal(jax.jit(_linalg.solve)(a, bm), jnp.linalg.solve(a, bm))
  x = a[..., :4]
  np.testing.assert_array_equal(jax.jit(jax.vmap(_linalg.svd_u))(x),
                                jnp.linalg.svd(x, full_matrices=False)[0])
  np.testing.assert_array_equal(jax.jit(_linalg.qr_q)(x), jnp.linalg.qr(x)[0])
  w, v = jax.jit(jax.vmap(jax.vmap(_linalg.eigh)))(a)
  w0, v0 = jnp.linalg.eigh(a)
  np.testing.assert_array_equal(w, w0)
  np.testing.assert_array_equal(v, v0)


def test_solution_matches_numpy_float64():  # an independent LAPACK build, in double precision
  a = _spd(jax.random.key(1), (5, 7, 7))
  b = jax.random.normal(jax.random.key(2), (5, 7))
  want = np.linalg.solve(np.asarray(a, np.float64), np.asarray(b, np.float64)[..., None])[..., 0]
  np.testing.assert_allclose(_linalg.solve(a, b), want, rtol=1e-5, atol=1e-6)


def test_cpu_programs_call_lapack_one_matrix_at_a_time():
  """The batched kernel is what parks every device thread; each call must see one matrix."""
  a = _spd(jax.random.key(3), (8, 16, 12, 12))  # 8*16 matrices: well above jaxlib's parallel cutoff
  b = jnp.ones((8, 16, 12))
  for fn, args in ((jax.vmap(_linalg.solve), (a, b)), (jax.vmap(_linalg.svd_u), (a,)),
                   (jax.vmap(_linalg.eigh), (a,)), (_linalg.qr_q, (a,))):
    calls = _lapack_calls(jax.jit(fn).lower(*args).compile().as_text())
    assert calls, "expected LAPACK custom calls on the CPU backend"
    assert all(len(shape) == 2 for _, shape in calls), calls
  # the plain jnp call is batched (what the wrappers avoid)
  plain = _lapack_calls(jax.jit(jnp.linalg.svd).lower(a).compile().as_text())
  assert any(len(shape) > 2 for _, shape in plain), plain


@pytest.mark.parametrize("call", [
    lambda: _linalg.solve(jnp.ones((3, 4)), jnp.ones(3)),
    lambda: _linalg.solve(jnp.ones((3, 3)), jnp.ones(4)),
    lambda: _linalg.solve(jnp.ones((2, 3, 3)), jnp.ones((5, 3))),
    lambda: _linalg.eigh(jnp.ones((3, 4))),
    lambda: _linalg.svd_u(jnp.ones(3)),
    lambda: _linalg.qr_q(jnp.ones(3)),
])
def test_bad_shapes_raise(call):
  with pytest.raises(ValueError):
    call()


def _paper_fits():
  """(name, vmapped fit, args): the replica computations whose batched LAPACK hung 8 fake devices."""
  from reprojax.algorithms import alft
  from reprojax.algorithms import ising_aggregation as ia
  votes = jax.random.bernoulli(jax.random.key(4), 0.7, (3, 40, 4)).astype(jnp.int32)
  y = jax.random.normal(jax.random.key(5), (3, 6, 5, 4))
  m = jnp.ones_like(y)
  keys = jax.random.split(jax.random.key(6), 3)

  def tucker(y, m, k):
    return alft.tucker_als(y, m, *alft.init_tucker(k, (6, 5, 4), (2, 2, 2)), n_iter=2)[0]

  def cp(y, m, k):
    return alft.cp_als(y, m, alft.init_cp(k, (6, 5, 4), 2), n_iter=2)[0]

  def lft(y, m, k):
    return alft.alft_als(y, m, alft.init_alft(k, (6, 5, 4), 2), (), n_iter=2)[0]

  return [
      ("ising_em_exact", jax.vmap(lambda v: ia.fit_ising_em(v, max_iters=2).params), (votes,)),
      ("ising_em_pseudo", jax.vmap(lambda v: ia.fit_ising_em(v, max_iters=2, m_step="pseudo").params),
       (votes,)),
      ("latent_factor_em", jax.vmap(lambda v: ia.fit_latent_factor_em(v, max_iters=2).params), (votes,)),
      ("tucker_als", jax.vmap(tucker), (y, m, keys)),
      ("cp_als", jax.vmap(cp), (y, m, keys)),
      ("lft_als", jax.vmap(lft), (y, m, keys)),
  ]


@pytest.mark.parametrize("name,fn,args", _paper_fits(), ids=lambda v: v if isinstance(v, str) else "")
def test_paper_fits_call_lapack_one_matrix_at_a_time(name, fn, args):
  calls = _lapack_calls(jax.jit(fn).lower(*args).compile().as_text())
  assert calls, f"{name}: expected LAPACK custom calls"
  assert all(len(shape) == 2 for _, shape in calls), (name, calls)
