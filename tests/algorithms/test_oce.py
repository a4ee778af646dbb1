"""Tests of algorithms.oce against independent references (issue 18's checks).

Procrustes: scipy's ``orthogonal_procrustes`` (over all orthogonal matrices) and
``Rotation.align_vectors`` (Kabsch, over rotations), and random rotations, none of
which beat it. UCE: ``numpy.linalg.lstsq`` on the stacked least-squares system
its closed form solves. OCE: orthogonality, det +1, norms and angles kept, the
identity with nothing to erase, the layer API equal to one layer at a time.
"""

import numpy as np
import pytest
import scipy.linalg
import scipy.stats
from scipy.spatial.transform import Rotation

from reprojax.algorithms import oce


def _rng(seed=0):
  return np.random.default_rng(seed)


def _generic(rng, i):
  a = rng.normal(size=(3 * i, i))
  return (a.T @ a / (3 * i)).astype(np.float32)


def test_procrustes_matches_scipy_over_orthogonal_matrices():
  m = _rng().normal(size=(9, 9)).astype(np.float32)
  want, _ = scipy.linalg.orthogonal_procrustes(np.eye(9), m.astype(np.float64))  # argmin ||R - M||
  got = np.asarray(oce.procrustes_rotation(m, reflection="allow"))
  np.testing.assert_allclose(got, want, atol=2e-5)


def test_kabsch_matches_scipy_align_vectors_and_beats_random_rotations():
  rng = _rng(1)
  a = rng.normal(size=(20, 3))
  b = a @ np.diag([1.0, 1.0, -1.0]) + 0.05 * rng.normal(size=(20, 3))  # a reflection fits best
  m = (a.T @ b).astype(np.float32)  # tr(R^T M) = sum_i a_i . R b_i
  rot, _ = Rotation.align_vectors(a, b)
  got = np.asarray(oce.procrustes_rotation(m))
  np.testing.assert_allclose(got, rot.as_matrix(), atol=2e-5)
  assert np.linalg.det(np.asarray(oce.procrustes_rotation(m, reflection="allow"))) < 0
  best = np.trace(got.T @ m)
  for q in scipy.stats.special_ortho_group.rvs(3, size=200, random_state=2):
    assert np.trace(q.T @ m) <= best + 1e-4
  last = np.asarray(oce.procrustes_rotation(m, reflection="last_column"))
  assert np.linalg.det(last) == pytest.approx(1.0, abs=1e-5)
  assert np.trace(last.T @ m) <= best + 1e-5


def test_procrustes_beats_random_rotations_in_high_dimension():
  m = _rng(3).normal(size=(12, 12)).astype(np.float32)
  r = np.asarray(oce.procrustes_rotation(m))
  best = np.trace(r.T @ m)
  qs = scipy.stats.special_ortho_group.rvs(12, size=100, random_state=4)
  assert max(np.trace(q.T @ m) for q in qs) < best
  for eps in (1e-2, 1e-1):  # and nearby rotations (exp of small skew matrices)
    s = _rng(5).normal(size=(12, 12))
    near = r @ scipy.linalg.expm(eps * (s - s.T))
    assert np.trace(near.T @ m) <= best + 1e-4


@pytest.mark.parametrize("o", [12, 20])  # fewer and more outputs than the width 16
def test_oce_rotation_is_orthogonal_keeps_norms_and_angles(o):
  rng = _rng(6)
  i = 16
  w0 = rng.normal(size=(o, i)).astype(np.float32) / 4
  erase, guide, keep = (rng.normal(size=(n, i)).astype(np.float32) for n in (3, 2, 5))
  r = np.asarray(oce.oce_rotation(w0, erase, guide, keep, _generic(rng, i), erase_scale=500.0,
                                  preserve_scale=1.0, generic_scale=10.0, lam=10.0), np.float64)
  np.testing.assert_allclose(r.T @ r, np.eye(o), atol=1e-5)
  assert np.linalg.det(r) == pytest.approx(1.0, abs=1e-5)
  w = r @ w0
  k = rng.normal(size=(i, 50))
  np.testing.assert_allclose(np.linalg.norm(w @ k, axis=0), np.linalg.norm(w0 @ k, axis=0),
                             rtol=1e-4)
  np.testing.assert_allclose(w.T @ w, w0.T @ w0, atol=1e-4)  # every angle between values
  # the erased concepts' values turn away; the preserved ones barely move
  cos = lambda x, y: np.sum(x * y, 0) / np.linalg.norm(x, axis=0) / np.linalg.norm(y, axis=0)  # noqa: E731
  assert np.max(cos(w @ erase.T, w0 @ erase.T)) < np.min(cos(w @ keep.T, w0 @ keep.T))
  assert np.max(cos(w @ erase.T, w0 @ erase.T)) < 0.5


@pytest.mark.parametrize("reflection", ["kabsch", "allow"])
def test_the_range_solve_of_a_widening_layer_equals_the_full_rotation(reflection):
  """O > I: oce_edit solves in the range of W0 (an I x I SVD); it equals R W0 of the full solve."""
  rng = _rng(12)
  i = 12
  w0 = rng.normal(size=(30, i)).astype(np.float32)
  e, g, p = (rng.normal(size=(n, i)).astype(np.float32) for n in (3, 2, 4))
  c = _generic(rng, i)
  kw = dict(erase_scale=200.0, preserve_scale=1.0, generic_scale=5.0, lam=3.0,
            reflection=reflection)
  full = np.asarray(oce.oce_rotation(w0, e, g, p, c, **kw), np.float64) @ w0
  np.testing.assert_allclose(np.asarray(oce.oce_edit(w0, e, g, p, c, **kw)), full, atol=2e-4)
  term = oce.preservation_term(w0, p, c, preserve_scale=1.0, generic_scale=5.0, lam=3.0)
  cached = oce.oce_edit(w0, e, g, preservation=term, erase_scale=200.0, reflection=reflection)
  np.testing.assert_allclose(np.asarray(cached), full, atol=2e-4)


def test_the_public_codes_last_column_rule_on_a_widening_layer_is_either_candidate():
  """O > I: ``M`` has an (O - I)-dimensional null space, and which basis of it the SVD returns
  is the LAPACK kernel's choice (OpenBLAS's Sandybridge and Haswell kernels choose differently
  here). Whether ``U V^T`` is a reflection depends on that basis, so the public code's rule
  (negate R's last column) may or may not fire: its ``R W0`` is one of two matrices. Tested:
  what holds whichever basis came, not which one came."""
  rng = _rng(12)
  i = 12
  w0 = rng.normal(size=(30, i)).astype(np.float32)
  e, g, p = (rng.normal(size=(n, i)).astype(np.float32) for n in (3, 2, 4))
  c = _generic(rng, i)
  kw = dict(erase_scale=200.0, preserve_scale=1.0, generic_scale=5.0, lam=3.0)
  unique = np.asarray(oce.oce_edit(w0, e, g, p, c, **kw), np.float64)  # kabsch = allow here
  r_allow = np.asarray(oce.oce_rotation(w0, e, g, p, c, reflection="allow", **kw), np.float64)
  np.testing.assert_allclose(r_allow @ w0, unique, atol=2e-4)  # the null-space part never meets W0
  flipped = r_allow.copy()
  flipped[:, -1] *= -1
  last = np.asarray(oce.oce_edit(w0, e, g, p, c, reflection="last_column", **kw), np.float64)
  gaps = [np.max(np.abs(last - r_allow @ w0)), np.max(np.abs(last - flipped @ w0))]
  assert min(gaps) < 2e-4, gaps  # unchanged, or the last column negated
  assert max(gaps) > 1e-2, gaps  # and the two candidates differ: the rule is not well defined
  np.testing.assert_allclose(last.T @ last, w0.T @ w0.astype(np.float64), rtol=1e-4, atol=1e-3)
  r_last = np.asarray(oce.oce_rotation(w0, e, g, p, c, reflection="last_column", **kw))
  assert np.linalg.det(r_last.astype(np.float64)) == pytest.approx(1.0, abs=1e-4)


def test_nothing_to_erase_is_the_identity():
  rng = _rng(7)
  i = 16
  erase = rng.normal(size=(2, i)).astype(np.float32)
  w_wide = rng.normal(size=(10, i)).astype(np.float32)  # full row rank: R = I exactly
  r = np.asarray(oce.oce_rotation(w_wide, erase, erase_scale=0.0))
  np.testing.assert_allclose(r, np.eye(10), atol=1e-5)
  w_tall = rng.normal(size=(24, i)).astype(np.float32)  # R acts as I on the range of W0
  w = np.asarray(oce.oce_edit(w_tall, erase, erase_scale=0.0))
  np.testing.assert_allclose(w, w_tall, atol=1e-4)


def test_concept_basis_is_the_projector_and_ignores_repeats():
  rng = _rng(8)
  w0 = rng.normal(size=(12, 8)).astype(np.float32)
  c = rng.normal(size=(3, 8)).astype(np.float32)
  v = w0 @ c.T
  q, _ = np.linalg.qr(v / np.linalg.norm(v, axis=0))
  e = np.asarray(oce.concept_basis(w0, c))
  np.testing.assert_allclose(e @ e.T, q @ q.T, atol=1e-5)
  rep = np.asarray(oce.concept_basis(w0, np.concatenate([c, c[:1], 2 * c[1:2]])))
  np.testing.assert_allclose(rep @ rep.T, q @ q.T, atol=1e-5)
  # and the erase term is E E^T (I - G*)
  g = rng.normal(size=(2, 8)).astype(np.float32)
  eg = np.asarray(oce.concept_basis(w0, g))
  term = np.asarray(oce.erasure_term(w0, c, g))
  np.testing.assert_allclose(term, q @ q.T @ (np.eye(12) - eg @ eg.T), atol=1e-5)


def test_uce_equals_numpy_lstsq():
  rng = _rng(9)
  o, i = 6, 10
  w0 = rng.normal(size=(o, i))
  ke, kg, kp = rng.normal(size=(3, i)), rng.normal(size=(3, i)), rng.normal(size=(4, i))
  es, ps, lam = 2.0, 0.7, 0.3
  # min es sum ||W k_e - W0 g_e||^2 + ps sum ||W k_p - W0 k_p||^2 + lam ||W - W0||^2, for W^T
  a = np.concatenate([np.sqrt(es) * ke, np.sqrt(ps) * kp, np.sqrt(lam) * np.eye(i)])
  b = np.concatenate([np.sqrt(es) * kg @ w0.T, np.sqrt(ps) * kp @ w0.T, np.sqrt(lam) * w0.T])
  want = np.linalg.lstsq(a, b, rcond=None)[0].T
  f32 = lambda x: x.astype(np.float32)  # noqa: E731
  got = oce.uce_edit(f32(w0), f32(ke), f32(kg), f32(kp), erase_scale=es, preserve_scale=ps,
                     lam=lam)
  np.testing.assert_allclose(np.asarray(got), want, atol=1e-4)


def test_layers_equal_one_layer_at_a_time_and_the_cache_changes_nothing():
  rng = _rng(10)
  i = 8
  ws = [rng.normal(size=(o, i)).astype(np.float32) for o in (6, 12, 6)]
  e, g, p = (rng.normal(size=(n, i)).astype(np.float32) for n in (2, 1, 3))
  c = _generic(rng, i)
  kw = dict(erase_scale=50.0, preserve_scale=1.0, generic_scale=2.0, lam=3.0)
  got = oce.oce_edit_layers(ws, e, g, p, c, **kw)
  cached = oce.oce_edit_layers(
      ws, e, g, preservation=[oce.preservation_term(w, p, c, preserve_scale=1.0,
                                                    generic_scale=2.0, lam=3.0) for w in ws],
      erase_scale=50.0)
  for w, a, b in zip(ws, got, cached):
    want = np.asarray(oce.oce_edit(w, e, g, p, c, **kw))
    np.testing.assert_allclose(np.asarray(a), want, atol=1e-5)
    np.testing.assert_allclose(np.asarray(b), want, atol=1e-4)
  uce = oce.uce_edit_layers(ws, e, np.repeat(g, 2, 0), p)
  for w, a in zip(ws, uce):
    np.testing.assert_allclose(np.asarray(a), np.asarray(oce.uce_edit(w, e, np.repeat(g, 2, 0), p)),
                               atol=1e-5)


def test_bad_input_is_a_clear_value_error():
  rng = _rng(11)
  w0 = rng.normal(size=(6, 8)).astype(np.float32)
  e = rng.normal(size=(2, 8)).astype(np.float32)
  with pytest.raises(ValueError, match="erase_CxI and W0_OxI must share the length of axis I"):
    oce.oce_edit(w0, rng.normal(size=(2, 7)).astype(np.float32))
  with pytest.raises(ValueError, match="erase_CxI must not be empty"):
    oce.oce_edit(w0, np.zeros((0, 8), np.float32))
  bad = w0.copy()
  bad[0, 0] = np.nan
  with pytest.raises(ValueError, match="W0_OxI must be finite"):
    oce.oce_edit(bad, e)
  with pytest.raises(ValueError, match="weights must hold at least one layer"):
    oce.oce_edit_layers([], e)
  with pytest.raises(ValueError, match="share one input width"):
    oce.oce_edit_layers([w0, rng.normal(size=(6, 9)).astype(np.float32)], e)
  with pytest.raises(ValueError, match="erase_scale must be >= 0"):
    oce.oce_edit(w0, e, erase_scale=-1.0)
  with pytest.raises(ValueError, match="reflection must be one of"):
    oce.procrustes_rotation(np.eye(3, dtype=np.float32), reflection="flip")
  with pytest.raises(ValueError, match="guide_CxI and erase_CxI must share"):
    oce.uce_edit(w0, e, e[:1].repeat(3, 0))
