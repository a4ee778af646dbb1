"""OCE's closed-form orthogonal edit of a value projection, and UCE's additive one beside it.

A text-conditioned generator's cross-attention turns a prompt token's embedding
``k`` (width ``I``) into a value ``W0 k`` (width ``O``). Both methods edit only
``W0`` (``O x I``), from concept embeddings given as rows (``erase_CxI``: the
concepts to remove, ``guide_GxI``: where to send them, ``preserve_PxI``: concepts
to keep, ``generic_IxI``: the second moment of generic prompt tokens).

OCE (multiplicative): ``W_new = R W0`` with ``R`` orthogonal, the maximiser of
``tr(R^T M)`` over rotations (orthogonal Procrustes: ``M = U S V^T``, ``R = U V^T``),

    M = -erase_scale G (I - G*) + preserve_scale sum_p (W0 k_p)(W0 k_p)^T
        + W0 (generic_scale C_g + lam I) W0^T,

``G = E E^T`` and ``G* = E* E*^T`` the projectors onto the spans of the unit
vectors ``W0 k / ||W0 k||`` of the erase and guide concepts. Every value keeps its
norm and every angle between values is kept; only directions move. All erase
concepts share one subspace (the paper's subspace-level objective), so many
concepts cost one SVD per layer. The concept-free part of ``M``
(:func:`preservation_term`) can be computed once per model and passed back in.

Two choices differ from the public code (HansSunY/OCE, ``oce.py``), both named
here so a reader can switch: (1) the bases come from a thin SVD with directions
below ``rtol`` of the largest singular value dropped, where the code uses a QR,
which gives the same projector for independent directions but spans rounding
noise when a direction repeats (its celebrity scripts repeat one guide 100
times); (2) when ``U V^T`` is a reflection, the default ``reflection="kabsch"``
flips the sign of the least singular direction (the maximiser over rotations,
Kabsch 1976), where the code flips the last column of ``R``
(``reflection="last_column"``); ``"allow"`` keeps the reflection.

The public code's rule is not well defined when the layer widens (``O > I``): ``M``
then has an ``(O - I)``-dimensional null space, the SVD's basis of it is the LAPACK
kernel's arbitrary choice, and whether ``U V^T`` is a reflection depends on that
basis; so ``"last_column"`` may or may not negate a column, and its ``R W0`` differs
between CPUs (OpenBLAS's Haswell and Sandybridge kernels give the two answers on the
same input). ``"kabsch"`` and ``"allow"`` give one ``R W0`` whatever the basis: the
null-space part of ``R`` never meets ``W0``'s range.

UCE (Gandikota et al., WACV 2024; additive): the least-squares edit

    W = argmin erase_scale sum_e ||W k_e - W0 g_e||^2
              + preserve_scale sum_p ||W k_p - W0 k_p||^2 + lam ||W - W0||_F^2
      = (lam W0 + erase_scale W0 G^T K_e + preserve_scale W0 K_p^T K_p)
        (lam I + erase_scale K_e^T K_e + preserve_scale K_p^T K_p)^{-1},

with erase concept ``e`` paired with guide row ``g_e``.

References:
  OCE: Orthogonal Concept Erasure, ICML 2026 (code: github.com/HansSunY/OCE).
  Gandikota, Orgad, Belinkov, Materzynska, Bau. Unified Concept Editing in
  Diffusion Models. WACV 2024.
  Kabsch. A solution for the best rotation to relate two sets of vectors. 1976.
"""

from __future__ import annotations

import functools
from typing import Any, Sequence

import jax
import jax.numpy as jnp
import numpy as np

from reprojax.algorithms import _common
from reprojax.algorithms import _linalg

REFLECTIONS = ("kabsch", "last_column", "allow")


def _scale(name: str, x: Any, positive: bool = False) -> jax.Array:
  x = _common.check_array(name, x, scalars=True)
  _common.check_in_range(name, x, 0.0, lo_open=positive)
  return x


def _check_reflection(reflection: str) -> None:
  if reflection not in REFLECTIONS:
    raise ValueError(f"reflection must be one of {REFLECTIONS}, got {reflection!r}")


def procrustes_rotation(M_OxO: jax.Array, reflection: str = "kabsch") -> jax.Array:
  """The orthogonal ``R`` maximising ``tr(R^T M)`` (``O x O``; leading batch axes allowed).

  ``M = U S V^T`` gives ``R = U V^T``, the maximiser over all orthogonal matrices.
  ``reflection`` says what to do when ``det(U V^T) = -1``: ``"kabsch"`` (default)
  returns ``U diag(1, ..., 1, -1) V^T``, the maximiser over rotations (det +1);
  ``"last_column"`` negates the last column of ``U V^T`` (the public OCE code;
  det +1, not a maximiser in general); ``"allow"`` returns ``U V^T``.
  """
  _check_reflection(reflection)
  m = _common.check_arrays({"M_OxO": M_OxO}, batch=("M_OxO",))["M_OxO"]
  return _procrustes(m, reflection)


@functools.partial(jax.jit, static_argnames="reflection")  # one program, not one per operation
def _procrustes(m, reflection):
  u, _, vh = _linalg.svd(m)
  r = u @ vh
  if reflection == "allow":
    return r
  flip = jnp.where(_linalg.det_sign(r) < 0, -1.0, 1.0).astype(r.dtype)[..., None]
  o = r.shape[-1]
  last = (jnp.arange(o) == o - 1)
  signs = jnp.where(last, flip, jnp.ones((), r.dtype))  # (..., O): 1, ..., 1, det
  if reflection == "kabsch":
    return u @ (signs[..., :, None] * vh)
  return r * signs[..., None, :]


def _basis(W0_OxI, rows_CxI, rtol):
  """Orthonormal columns spanning the unit vectors ``W0 k / ||W0 k||`` (dropped ones zeroed)."""
  v = W0_OxI @ rows_CxI.T
  v = v / (jnp.linalg.norm(v, axis=0, keepdims=True) + 1e-8)
  u, s, _ = _linalg.svd(v)
  keep = s > rtol * s[..., :1]
  return u * keep[..., None, :].astype(u.dtype)


def concept_basis(W0_OxI: jax.Array, concepts_CxI: jax.Array, rtol: float = 1e-4) -> jax.Array:
  """Orthonormal basis ``(O, min(O, C))`` of the span of the concepts' unit value directions.

  Columns whose singular value is below ``rtol`` times the largest are zero (a
  repeated or dependent concept adds no direction), so ``E @ E.T`` is the
  orthogonal projector onto the span.
  """
  a = _common.check_arrays({"W0_OxI": W0_OxI, "concepts_CxI": concepts_CxI})
  return _basis_jit(a["W0_OxI"], a["concepts_CxI"], rtol)


def erasure_term(W0_OxI: jax.Array, erase_CxI: jax.Array, guide_GxI: jax.Array | None = None,
                 rtol: float = 1e-4) -> jax.Array:
  """``G (I - G*)`` ``(O, O)``: the erase projector times the complement of the guide's.

  Without guide concepts ``G* = 0`` and the term is ``G``.
  """
  a = _common.check_arrays({"W0_OxI": W0_OxI, "erase_CxI": erase_CxI, "guide_GxI": guide_GxI})
  return _erasure_jit(a["W0_OxI"], a["erase_CxI"], a["guide_GxI"], rtol)


def _erasure(w0, erase, guide, rtol):
  e = _basis(w0, erase, rtol)
  if guide is None:
    return e @ e.T
  g = _basis(w0, guide, rtol)
  return e @ (e.T - (e.T @ g) @ g.T)  # E E^T (I - E* E*^T), never forming I - G*


def preservation_term(W0_OxI: jax.Array, preserve_PxI: jax.Array | None = None,
                      generic_IxI: jax.Array | None = None, *, preserve_scale: Any = 0.3,
                      generic_scale: Any = 0.5, lam: Any = 1.5) -> jax.Array:
  """The concept-free part of OCE's ``M`` ``(O, O)``, symmetric positive semi-definite:

  ``preserve_scale (W0 K_p^T)(W0 K_p^T)^T + W0 (generic_scale C_g + lam I) W0^T``.
  Depends on the model and the preserved concepts only: compute it once and pass
  it to :func:`oce_rotation` as ``preservation=``. Defaults are the public code's.
  """
  a = _common.check_arrays({"W0_OxI": W0_OxI, "preserve_PxI": preserve_PxI,
                            "generic_IxI": generic_IxI})
  return _preservation_jit(a["W0_OxI"], a["preserve_PxI"], a["generic_IxI"],
                       _scale("preserve_scale", preserve_scale),
                       _scale("generic_scale", generic_scale), _scale("lam", lam))


def _preservation(w0, preserve, generic, preserve_scale, generic_scale, lam):
  inner = lam * jnp.eye(w0.shape[1], dtype=w0.dtype)
  if generic is not None:
    inner = inner + generic_scale * generic
  out = w0 @ inner @ w0.T
  if preserve is not None:
    vp = w0 @ preserve.T
    out = out + preserve_scale * (vp @ vp.T)
  return out


def oce_rotation(W0_OxI: jax.Array, erase_CxI: jax.Array, guide_GxI: jax.Array | None = None,
                 preserve_PxI: jax.Array | None = None, generic_IxI: jax.Array | None = None, *,
                 erase_scale: Any = 1.0, preserve_scale: Any = 0.3, generic_scale: Any = 0.5,
                 lam: Any = 1.5, preservation: jax.Array | None = None,
                 reflection: str = "kabsch", rtol: float = 1e-4) -> jax.Array:
  """OCE's rotation ``R`` ``(O, O)`` for one layer: ``procrustes_rotation(M)``.

  ``preservation`` (``(O, O)``, from :func:`preservation_term`) replaces the
  concept-free part of ``M``; then ``preserve_PxI``, ``generic_IxI`` and their
  scales and ``lam`` are not used. Defaults are the public code's (its scripts
  raise ``erase_scale`` to hundreds or thousands: the erase term must outweigh
  ``lam ||W0||^2``).
  """
  a = _common.check_arrays({"W0_OxI": W0_OxI, "erase_CxI": erase_CxI, "guide_GxI": guide_GxI,
                            "preserve_PxI": preserve_PxI, "generic_IxI": generic_IxI,
                            "preservation_OxO": preservation})
  _check_reflection(reflection)
  return _rotation(a["W0_OxI"], a["erase_CxI"], a["guide_GxI"], a["preserve_PxI"],
                   a["generic_IxI"], a["preservation_OxO"], _scale("erase_scale", erase_scale),
                   _scale("preserve_scale", preserve_scale),
                   _scale("generic_scale", generic_scale), _scale("lam", lam), rtol, reflection)


@functools.partial(jax.jit, static_argnames="reflection")
def _rotation(w0, erase, guide, preserve, generic, preservation, erase_scale, preserve_scale,
              generic_scale, lam, rtol, reflection):
  return _procrustes(_full_m(w0, erase, guide, preserve, generic, preservation, erase_scale,
                             preserve_scale, generic_scale, lam, rtol), reflection)


def _full_m(w0, erase, guide, preserve, generic, preservation, erase_scale, preserve_scale,
            generic_scale, lam, rtol):
  """OCE's ``M`` ``(O, O)`` (no validation)."""
  keep = (_preservation(w0, preserve, generic, preserve_scale, generic_scale, lam)
          if preservation is None else preservation)
  return keep - erase_scale * _erasure(w0, erase, guide, rtol)


def oce_edit(W0_OxI: jax.Array, erase_CxI: jax.Array, guide_GxI: jax.Array | None = None,
             preserve_PxI: jax.Array | None = None, generic_IxI: jax.Array | None = None, *,
             erase_scale: Any = 1.0, preserve_scale: Any = 0.3, generic_scale: Any = 0.5,
             lam: Any = 1.5, preservation: jax.Array | None = None,
             reflection: str = "kabsch", rtol: float = 1e-4) -> jax.Array:
  """The edited value projection ``R W0`` ``(O, I)``; arguments as :func:`oce_rotation`.

  When the layer widens (``O > I``, as Stable Diffusion's 1280-wide layers over
  768-wide text) the Procrustes problem is solved in the ``I``-dimensional range
  of ``W0``, which holds the row and column spaces of ``M``: with ``W0 = Q T``
  (thin QR), ``M = Q K Q^T`` for ``K = Q^T M Q``, and ``R W0 = Q (U' V'^T) T`` from
  the SVD ``K = U' S' V'^T``: an ``I x I`` SVD instead of an ``O x O`` one, and no
  ``O x O`` matrix formed unless ``preservation`` is given. On the complement of
  the range ``R`` is free (it never meets ``W0``), so a reflection ``U' V'^T`` is
  completed to a rotation there at no cost: the result equals ``R W0`` for the
  maximiser over rotations. With ``reflection="last_column"`` (the public code's
  fix, which acts on the full ``R``) the full ``O x O`` solve runs.
  """
  a = _common.check_arrays({"W0_OxI": W0_OxI, "erase_CxI": erase_CxI, "guide_GxI": guide_GxI,
                            "preserve_PxI": preserve_PxI, "generic_IxI": generic_IxI,
                            "preservation_OxO": preservation})
  _check_reflection(reflection)
  scales = (_scale("erase_scale", erase_scale), _scale("preserve_scale", preserve_scale),
            _scale("generic_scale", generic_scale), _scale("lam", lam))
  return _edit_one_jit(a["W0_OxI"], a["erase_CxI"], a["guide_GxI"], a["preserve_PxI"],
                       a["generic_IxI"], a["preservation_OxO"], *scales, reflection, rtol)


def _edit_one(w0, erase, guide, preserve, generic, preservation, erase_scale, preserve_scale,
              generic_scale, lam, reflection, rtol):
  """One layer's ``R W0`` (no validation: the public callers validate)."""
  o, i = w0.shape
  if o <= i or reflection == "last_column":
    m = _full_m(w0, erase, guide, preserve, generic, preservation, erase_scale, preserve_scale,
                generic_scale, lam, rtol)
    return procrustes_rotation(m, reflection) @ w0
  q = _linalg.qr_q(w0)  # (O, I): an orthonormal basis of the range of W0
  t = q.T @ w0  # (I, I): W0 = Q T
  if preservation is None:  # Q^T W0 (.) W0^T Q = T (.) T^T: the same term with T for W0
    keep = _preservation(t, preserve, generic, preserve_scale, generic_scale, lam)
  else:
    keep = q.T @ preservation @ q
  e = _basis(w0, erase, rtol)
  eq = q.T @ e
  if guide is None:
    term = eq @ eq.T
  else:
    g = _basis(w0, guide, rtol)
    term = eq @ (eq.T - (e.T @ g) @ (q.T @ g).T)  # Q^T E E^T (I - G*) Q
  u, _, vh = _linalg.svd(keep - erase_scale * term)
  return q @ ((u @ vh) @ t)


# The public functions' arithmetic, one program each (eagerly, JAX would compile one per
# operation); the values are checked before the call.
_basis_jit = jax.jit(_basis)
_erasure_jit = jax.jit(_erasure)
_preservation_jit = jax.jit(_preservation)
_edit_one_jit = jax.jit(_edit_one, static_argnames="reflection")


def _per_shape(weights, edit, preservation=None):
  """``[edit(W_stack, P_stack)[j]]`` back in layer order, one call per shape of layer
  (``P_stack`` None without ``preservation``)."""
  groups = {}
  for i, w in enumerate(weights):
    groups.setdefault(tuple(np.shape(w)), []).append(i)
  out = [None] * len(weights)
  for idx in groups.values():
    w = jnp.stack([jnp.asarray(weights[i]) for i in idx])
    p = None if preservation is None else jnp.stack([jnp.asarray(preservation[i]) for i in idx])
    new = edit(w, p)
    for j, i in enumerate(idx):
      out[i] = new[j]
  return out


def _check_layers(weights, preservation):
  if isinstance(weights, (jax.Array, np.ndarray)) or not isinstance(weights, Sequence):
    raise ValueError(f"weights must be a list of (O, I) matrices, got {type(weights).__name__}")
  if not weights:
    raise ValueError("weights must hold at least one layer, got an empty list")
  for i, w in enumerate(weights):
    _common.check_arrays({f"weights[{i}]_OxI": w})
  widths = {np.shape(w)[1] for w in weights}
  if len(widths) != 1:
    raise ValueError(f"weights must share one input width I (the text embedding), got {widths}")
  if preservation is not None:
    if len(preservation) != len(weights):
      raise ValueError(f"preservation must hold one (O, O) term per layer ({len(weights)}), "
                       f"got {len(preservation)}")
    for i, (w, p) in enumerate(zip(weights, preservation)):
      if np.shape(p) != (np.shape(w)[0],) * 2:
        raise ValueError(f"preservation[{i}] must have shape {(np.shape(w)[0],) * 2}, got "
                         f"{np.shape(p)}")


def oce_edit_layers(weights: Sequence[jax.Array], erase_CxI: jax.Array,
                    guide_GxI: jax.Array | None = None, preserve_PxI: jax.Array | None = None,
                    generic_IxI: jax.Array | None = None, *, erase_scale: Any = 1.0,
                    preserve_scale: Any = 0.3, generic_scale: Any = 0.5, lam: Any = 1.5,
                    preservation: Sequence[jax.Array] | None = None,
                    reflection: str = "kabsch", rtol: float = 1e-4) -> list[jax.Array]:
  """:func:`oce_edit` over a list of layers sharing the input width ``I``: ``[R_l W0_l]``.

  Layers of one shape are stacked and edited by one jitted ``jax.vmap`` (one
  program per shape, reused by later calls; on CPU the SVDs of a stack run one
  after another, see ``algorithms/_linalg.py``). ``preservation`` is one cached
  :func:`preservation_term` per layer, or None (then computed from the scales).
  """
  _check_layers(weights, preservation)
  _check_reflection(reflection)
  concepts = _common.check_arrays({"erase_CxI": erase_CxI, "guide_GxI": guide_GxI,
                                   "preserve_PxI": preserve_PxI, "generic_IxI": generic_IxI,
                                   "weights_OxI": weights[0]})
  scales = tuple(_scale(n, v) for n, v in (("erase_scale", erase_scale),
                                           ("preserve_scale", preserve_scale),
                                           ("generic_scale", generic_scale), ("lam", lam)))
  return _per_shape(weights, lambda w, p: _oce_group(
      w, concepts["erase_CxI"], concepts["guide_GxI"], concepts["preserve_PxI"],
      concepts["generic_IxI"], p, *scales, reflection=reflection, rtol=rtol), preservation)


@functools.partial(jax.jit, static_argnames=("reflection", "rtol"))
def _oce_group(w_LxOxI, erase, guide, preserve, generic, preservation_LxOxO, erase_scale,
               preserve_scale, generic_scale, lam, *, reflection, rtol):
  def one(w0, pres):
    return _edit_one(w0, erase, guide, preserve, generic, pres, erase_scale, preserve_scale,
                     generic_scale, lam, reflection, rtol)

  if preservation_LxOxO is None:
    return jax.vmap(lambda w0: one(w0, None))(w_LxOxI)
  return jax.vmap(one)(w_LxOxI, preservation_LxOxO)


def uce_edit(W0_OxI: jax.Array, erase_CxI: jax.Array, guide_CxI: jax.Array,
             preserve_PxI: jax.Array | None = None, *, erase_scale: Any = 1.0,
             preserve_scale: Any = 1.0, lam: Any = 0.5) -> jax.Array:
  """UCE's closed-form additive edit ``(O, I)``: erase concept ``e`` is sent to ``W0 g_e``.

  ``guide_CxI`` holds one guide row per erase row (repeat a shared guide).
  """
  a = _common.check_arrays({"W0_OxI": W0_OxI, "erase_CxI": erase_CxI, "guide_CxI": guide_CxI,
                            "preserve_PxI": preserve_PxI})
  w0, ke, kg, kp = a["W0_OxI"], a["erase_CxI"], a["guide_CxI"], a["preserve_PxI"]
  es, ps, lam = (_scale("erase_scale", erase_scale), _scale("preserve_scale", preserve_scale),
                 _scale("lam", lam, positive=True))
  return _uce(w0, ke, kg, kp, es, ps, lam)


@jax.jit
def _uce(w0, ke, kg, kp, es, ps, lam):
  rhs = lam * w0 + es * (w0 @ kg.T) @ ke  # (O, I)
  lhs = lam * jnp.eye(w0.shape[1], dtype=w0.dtype) + es * ke.T @ ke  # (I, I), symmetric
  if kp is not None:
    rhs = rhs + ps * (w0 @ kp.T) @ kp
    lhs = lhs + ps * kp.T @ kp
  return _linalg.solve(lhs, rhs.T).T  # rhs lhs^{-1}, lhs symmetric


def uce_edit_layers(weights: Sequence[jax.Array], erase_CxI: jax.Array, guide_CxI: jax.Array,
                    preserve_PxI: jax.Array | None = None, *, erase_scale: Any = 1.0,
                    preserve_scale: Any = 1.0, lam: Any = 0.5) -> list[jax.Array]:
  """:func:`uce_edit` over a list of layers sharing the input width ``I`` (one jitted
  ``jax.vmap`` per layer shape)."""
  _check_layers(weights, None)
  concepts = _common.check_arrays({"erase_CxI": erase_CxI, "guide_CxI": guide_CxI,
                                   "preserve_PxI": preserve_PxI, "weights_OxI": weights[0]})
  scales = (_scale("erase_scale", erase_scale), _scale("preserve_scale", preserve_scale),
            _scale("lam", lam, positive=True))
  return _per_shape(weights, lambda w, _: _uce_group(
      w, concepts["erase_CxI"], concepts["guide_CxI"], concepts["preserve_PxI"], *scales))


@jax.jit
def _uce_group(w_LxOxI, erase, guide, preserve, erase_scale, preserve_scale, lam):
  return jax.vmap(lambda w0: uce_edit(w0, erase, guide, preserve, erase_scale=erase_scale,
                                      preserve_scale=preserve_scale, lam=lam))(w_LxOxI)
