r"""Benchmark: one FNO training step, ours (Flax, XLA) against neuraloperator's (PyTorch, CPU).

    python -m reprojax.experiments.bench --papers=fno [--full]

The 1-D Burgers shapes of the paper: batch 20, width 64, 16 Fourier modes, 4
Fourier layers, a pointwise projection of width 128, grid s = 256 and s = 1024
(``--full`` adds s = 4096); and its 2-D Darcy shape: batch 20, width 32, 12 x 12
modes (plus and minus frequencies on the first axis), s = 85 padded by 9 at the end
of each axis. neuraloperator's ``FNO`` is configured as close to
the original architecture as its options allow (no channel MLPs, linear skips,
a one-layer lifting, the grid appended as an input channel, ``n_modes = 31``,
which keeps the same 16 rfft modes; its block, which then applies the GeLU twice,
is patched to apply it once, as the original; in 2-D its symmetric domain padding is
replaced by the original's one-sided padding of 9), and the parameter counts are reported
side by side. One step is forward, backward on the relative L2 loss and an Adam
update, on both sides. neuraloperator's model is loaded with our initial
weights, so the first step's losses must agree (the forward passes are the same
function). neuraloperator and a CPU build of torch are the ``bench`` extra.
"""

from __future__ import annotations

import types
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import optax

from reprojax.experiments import bench
from reprojax.experiments import common
from reprojax.models import fno

BATCH, DEPTH, PROJECTION = 20, 4, 128


class Shape(NamedTuple):
  """One benchmarked FNO: grid side s, spatial dimension d, width, modes per axis, padding."""

  s: int
  d: int = 1
  width: int = 64
  modes: int = 16
  padding: int = 0


BURGERS = (Shape(256), Shape(1024))
DARCY = Shape(85, d=2, width=32, modes=12, padding=9)


def _flops(sh: Shape) -> float:
  """FLOPs of one training step of ours: 3x the forward's dominant terms (matmuls and DFTs)."""
  w, m = sh.width, sh.modes
  n = sh.s ** sh.d  # grid points without padding
  if sh.d == 1:
    spectral = 8 * n * m * w + 8 * m * w * w  # forward and inverse DFT of the kept modes, mixing
  else:  # last axis: real DFT to m modes; first: complex DFT to 2m; mixing of 2 m^2 modes
    p = sh.s + sh.padding
    spectral = (2 * (4 * p * p * m * w)  # last-axis DFT and its inverse (cos and sin parts)
                + 2 * (8 * p * m * 2 * m * w)  # first-axis complex DFT and inverse
                + 8 * 2 * m * m * w * w)  # complex mixing of the kept modes
  p_n = (sh.s + sh.padding) ** sh.d
  per_sample = (2 * n * (1 + sh.d) * w  # lifting of (a, x)
                + DEPTH * (spectral + 2 * p_n * w * w)  # Fourier layers and pointwise W
                + 2 * n * w * PROJECTION + 2 * n * PROJECTION)  # projection
  return 3.0 * BATCH * per_sample


def _ours(sh: Shape, x: np.ndarray, y: np.ndarray):
  """Our training step from seed-0 parameters: a call returning (loss, params, opt state)."""
  model = fno.FNO(modes=(sh.modes,) * sh.d, width=sh.width, depth=DEPTH, projection=PROJECTION,
                  padding=sh.padding)
  params = model.init(jax.random.key(0), jnp.asarray(x[:1]))
  opt = optax.adam(1e-3)
  state = opt.init(params)

  @jax.jit
  def step(p, o, xb, yb):
    loss, g = jax.value_and_grad(
        lambda q: jnp.mean(common.relative_l2(model.apply(q, xb), yb)))(p)
    upd, o = opt.update(g, o, p)
    return loss, optax.apply_updates(p, upd), o

  xj, yj = jnp.asarray(x), jnp.asarray(y)
  return (lambda: step(params, state, xj, yj)), params, np.asarray(model.apply(params, xj))


def _to_torch(params) -> dict:
  """Our FNO parameters as neuraloperator's state dict (its layout: Conv1d out x in x 1)."""
  import torch  # pylint: disable=g-import-not-at-top
  p = jax.tree.map(np.array, params["params"])  # writable copies for torch
  conv = lambda k: torch.from_numpy(np.ascontiguousarray(k.T[:, :, None]))
  sd = {"lifting.fcs.0.weight": conv(p["lift"]["kernel"]),
        "lifting.fcs.0.bias": torch.from_numpy(p["lift"]["bias"]),
        "projection.fcs.0.weight": conv(p["project_hidden"]["kernel"]),
        "projection.fcs.0.bias": torch.from_numpy(p["project_hidden"]["bias"]),
        "projection.fcs.1.weight": conv(p["project_out"]["kernel"]),
        "projection.fcs.1.bias": torch.from_numpy(p["project_out"]["bias"])}
  for i in range(DEPTH):
    w = p[f"spectral_{i}"]
    blocks = [w[f"weight_{b}_real"] + 1j * w[f"weight_{b}_imag"] for b in range(2)
              if f"weight_{b}_real" in w]
    if len(blocks) == 1:  # 1-D: (modes, in, out) -> (in, out, modes)
      r = blocks[0].transpose(1, 2, 0)
    else:  # 2-D: neuraloperator keeps the first axis fft-shifted, frequencies -m..m-1, so
      # our negative block (-m..-1) comes first: (m1, m2, in, out) x 2 -> (in, out, 2 m1, m2)
      r = np.concatenate([blocks[1], blocks[0]], axis=0).transpose(2, 3, 0, 1)
    sd[f"fno_blocks.convs.{i}.weight.tensor"] = torch.from_numpy(r.astype(np.complex64))
    # our pointwise W_l carries the layer's bias; neuraloperator puts it on the spectral conv
    bias = p[f"pointwise_{i}"]["bias"]
    sd[f"fno_blocks.convs.{i}.bias"] = torch.from_numpy(bias.reshape(-1, *(1,) * (r.ndim - 2)))
    sd[f"fno_blocks.fno_skips.{i}.conv.weight"] = conv(p[f"pointwise_{i}"]["kernel"])
  return sd


def _one_gelu(blocks, x, index=0, output_shape=None):
  """neuraloperator's block as the original FNO layer: sigma(K v + W v), sigma once."""
  skip = blocks.convs[index].transform(blocks.fno_skips[index](x), output_shape=output_shape)
  x = blocks.convs[index](x, output_shape=output_shape) + skip
  return blocks.non_linearity(x) if index < blocks.n_layers - 1 else x


class _EndPadding:
  """The original FNO's padding: ``p`` zeros at the end of each spatial axis (neuraloperator's
  ``DomainPadding`` pads both ends), with the same ``pad`` / ``unpad`` interface."""

  def __init__(self, p: int, d: int):
    self.p, self.d = p, d

  def pad(self, x):
    import torch  # pylint: disable=g-import-not-at-top
    return torch.nn.functional.pad(x, (0, self.p) * self.d)

  def unpad(self, x):
    return x[(Ellipsis,) + (slice(0, -self.p),) * self.d]


def _theirs(sh: Shape, x: np.ndarray, y: np.ndarray, params):
  """neuraloperator's step from the same parameters: a call returning the loss."""
  import torch  # pylint: disable=g-import-not-at-top
  from neuralop.models import FNO  # pylint: disable=g-import-not-at-top
  # n_modes: 1-D 2m - 1 keeps rfft modes 0..m-1; 2-D (2m, 2m - 1): first axis -m..m-1 (as our
  # two blocks), last axis 0..m-1.
  n_modes = (2 * sh.modes - 1,) if sh.d == 1 else (2 * sh.modes, 2 * sh.modes - 1)
  model = FNO(n_modes=n_modes, in_channels=1 + sh.d, out_channels=1,
              hidden_channels=sh.width, n_layers=DEPTH, lifting_channel_ratio=0,
              projection_channel_ratio=PROJECTION // sh.width,
              positional_embedding=None, use_channel_mlp=False, fno_skip="linear")
  sd = model.state_dict()
  ours = _to_torch(params)
  tensors = {k for k in sd if not k.startswith("_")}  # not its '_metadata' entry
  if set(ours) != tensors or any(ours[k].shape != sd[k].shape for k in tensors):
    raise ValueError("neuraloperator's FNO layout changed: cannot share our weights "
                     f"({sorted(set(ours) ^ tensors)})")
  sd.update(ours)
  model.load_state_dict(sd)
  # Without channel MLPs, neuraloperator 2.0's block applies its non-linearity twice (after
  # the skip sum and again at the block's end): sigma(sigma(K v + W v)). The original FNO,
  # and ours, apply it once; the bench patches this one instance to do the same.
  model.fno_blocks.forward_with_postactivation = types.MethodType(_one_gelu, model.fno_blocks)
  if sh.padding:
    model.domain_padding = _EndPadding(sh.padding, sh.d)
  axes = np.meshgrid(*[np.linspace(0, 1, sh.s, dtype=np.float32)] * sh.d, indexing="ij")
  grids = [np.broadcast_to(g, x.shape) for g in axes]  # as models/_grid.py
  xt = torch.from_numpy(np.stack([x, *grids], axis=1).copy())  # (B, 1 + d, *grid): a and the grid
  yt = torch.from_numpy(y[:, None].copy())
  opt = torch.optim.Adam(model.parameters(), lr=1e-3)

  def step():
    opt.zero_grad(set_to_none=True)
    out = model(xt)
    loss = torch.mean(torch.linalg.norm((out - yt).flatten(1), dim=1)
                      / torch.linalg.norm(yt.flatten(1), dim=1))
    loss.backward()
    opt.step()
    return loss.detach().numpy()

  count = sum(p.numel() * (2 if p.is_complex() else 1) for p in model.parameters())
  with torch.no_grad():
    out = model(xt)[:, 0].numpy()  # the forward pass before any step, as ours
  return step, count, out


def _agreement(out_ours: np.ndarray, out_theirs: np.ndarray):
  """``agree`` of a row: the forward outputs on shared weights, then the first step's losses.

  The outputs are compared directly (relative to their norm): the loss against the rolled
  input alone would hide them, since the untrained output is small beside the target.
  """
  d_out = float(np.linalg.norm(out_ours - out_theirs) / np.linalg.norm(out_theirs))

  def agree(ours, theirs):
    a, b = float(ours[0]), float(theirs)
    d = abs(a - b) / abs(b)
    return max(d, d_out) <= 1e-4, (
        f"shared weights: forward outputs differ by {d_out:.1e} relative, first step's loss "
        f"{a:.6f} vs {b:.6f} ({d:.1e}); both <= 1e-4")
  return agree


def workloads(full: bool) -> list[bench.Workload]:
  rows = []
  for sh in BURGERS + ((Shape(4096),) if full else ()) + (DARCY,):
    rng = np.random.default_rng(sh.s)
    x = rng.normal(size=(BATCH,) + (sh.s,) * sh.d).astype(np.float32)
    y = np.roll(x, 3, axis=1).astype(np.float32)
    ours, params, out_ours = _ours(sh, x, y)
    theirs, n_theirs, out_theirs = _theirs(sh, x, y, params)
    n_ours = sum(int(np.prod(a.shape)) for a in jax.tree.leaves(params))
    shape = (f"1-D s = {sh.s}" if sh.d == 1 else
             f"2-D {sh.s} x {sh.s} padded by {sh.padding} (Darcy)")
    modes = f"{sh.modes} modes" if sh.d == 1 else f"{sh.modes} x {sh.modes} modes (+-)"
    note = ""
    if sh == BURGERS[0] or sh == DARCY:
      note = (f"neuraloperator holds {n_theirs:,} parameters (complex ones counted twice), "
              f"loaded from ours; FLOPs: 3x the forward's lifting, DFTs of the kept modes, "
              "mode mixing, pointwise layers and projection")
    if sh == DARCY:
      note += "; neuraloperator's symmetric domain padding replaced by the original's, at the end"
    rows.append(bench.Workload(
        paper="fno", name=f"training step (Adam), {shape}, batch {BATCH}, width {sh.width}, "
        f"{modes}, {DEPTH} layers, {n_ours:,} parameters",
        ours=ours, peer=theirs, peer_name="neuraloperator FNO (PyTorch CPU; one GeLU a block)",
        peer_package="neuraloperator", agree=_agreement(out_ours, out_theirs),
        flops=_flops(sh), repeats=10, note=note))
  return rows
