r"""Benchmark: OCE erasing 100 concepts on Stable Diffusion v1.4's 16 cross-attention shapes.

    python -m reprojax.experiments.bench --papers=oce

``make bench``'s row: :func:`reprojax.algorithms.oce.oce_edit_layers` (one jitted
``vmap`` per layer shape, everything in the call: the concept-free terms are
not cached, so both sides do the same work; the six 1280-wide layers are solved
in the 768-dimensional range of ``W0``, see :func:`reprojax.algorithms.oce.oce_edit`)
against the public code's
procedure, which we transcribed into PyTorch from its description (``oce.py`` of
HansSunY/OCE: per layer, in a Python loop, QR bases of the erase and guide
directions, ``M`` assembled in full, ``torch.linalg.svd``, ``R = U V^T`` with the
last column negated on a reflection, ``W = R W0``), on the same CPU. The public
figure also includes text encoding of every prompt, which neither side does
here: the concepts are synthetic rows. The experiment's ``hundred_concepts_time``
claim times our cached path (the concept-free terms computed once per model).
"""

from __future__ import annotations

import jax
import numpy as np

from reprojax.algorithms import oce
from reprojax.experiments import bench
from reprojax.experiments.oce import programs

_KW = dict(preserve_scale=1.0, generic_scale=10.0, lam=10.0)
_ERASE_SCALE = 1000.0


def _torch_procedure(weights, erase, guide, preserve, generic):
  """The public code's per-layer loop, in PyTorch (our transcription; float32, CPU)."""
  import torch  # pylint: disable=g-import-not-at-top  (the bench extra)

  ke, kg, kp, cg = (torch.from_numpy(np.array(a)) for a in (erase, guide, preserve, generic))
  out = []
  with torch.no_grad():
    for w in weights:
      w0 = torch.from_numpy(np.array(w))
      d = w0.shape[0]

      def basis(rows):
        v = w0 @ rows.T
        v = v / (v.norm(dim=0, keepdim=True) + 1e-8)
        return torch.linalg.qr(v, mode="reduced").Q

      e, g = basis(ke), basis(kg)
      eye = torch.eye(d)
      vp = w0 @ kp.T
      m = (-_ERASE_SCALE * (e @ e.T) @ (eye - g @ g.T) + _KW["preserve_scale"] * vp @ vp.T
           + _KW["generic_scale"] * w0 @ cg @ w0.T + _KW["lam"] * w0 @ w0.T)
      u, _, vh = torch.linalg.svd(m)
      r = u @ vh
      if torch.linalg.det(r) < 0:
        r[:, -1] = -r[:, -1]
      out.append((r @ w0).numpy())
  return out


def _agree(ours, peer):
  worst = max(float(np.max(np.abs(np.asarray(a) - b)) / np.max(np.abs(b))) for a, b in
              zip(ours, peer))
  return worst <= 1e-3, f"max |W diff| / max |W| {worst:.1e} <= 1e-3 over the 16 layers"


def workloads(full: bool) -> list[bench.Workload]:
  """One row: 100 concepts (100 kept, one guide) on the 16 SD v1.4 to_v shapes."""
  del full  # the paper's shapes at every scale
  weights, erase, guide, preserve, generic = programs.sd_shapes_problem(jax.random.key(0), 100)

  def ours():
    return oce.oce_edit_layers(weights, erase, guide, preserve, generic,
                               erase_scale=_ERASE_SCALE, **_KW)

  # FLOPs of one call of ours, dominant terms per layer (an n x n SVD ~ 22 n^3 as LAPACK's
  # gesdd): O <= I: the O x O SVD, W0 (C W0^T) 2 O I^2 + 2 O^2 I, R W0 2 O^2 I; O > I (the
  # range solve): the thin QR 4 O I^2, the I x I SVD, T (C T^T) 4 I^3, Q (U V^T T) 2 O I^2 + 2 I^3.
  i = programs.SD14_TEXT_WIDTH
  flops = sum(22 * o**3 + 2 * o * i**2 + 4 * o**2 * i if o <= i else
              22 * i**3 + 6 * o * i**2 + 6 * i**3 for o in programs.SD14_TO_V_OUT)
  return [bench.Workload(
      paper="oce", name="OCE edit, 100 concepts at once, SD v1.4's 16 to_v shapes (320-1280 x 768)",
      ours=ours, peer=lambda: _torch_procedure(weights, erase, guide, preserve, generic),
      peer_name="the public code's per-layer loop, in PyTorch (our transcription)",
      peer_package="torch", agree=_agree, flops=float(flops), repeats=5,
      note="both without the concept-free cache; the paper's 4.3 s (GPU) also encodes the "
           "prompts; flops: SVDs as 22 n^3 plus the products (ours: the range solve where O > I)")]
