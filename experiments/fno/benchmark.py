r"""Benchmark: one FNO training step, ours (Flax, XLA) against neuraloperator's (PyTorch, CPU).

    python -m reprojax.experiments.bench --papers=fno [--full]

The 1-D Burgers shapes of the paper: batch 20, width 64, 16 Fourier modes, 4
Fourier layers, a pointwise projection of width 128, grid s = 256 and s = 1024
(``--full`` adds s = 4096). neuraloperator's ``FNO`` is configured as close to
the original architecture as its options allow (no channel MLPs, linear skips,
a one-layer lifting, the grid appended as an input channel, ``n_modes = 31``,
which keeps the same 16 rfft modes; its block, which then applies the GeLU twice,
is patched to apply it once, as the original), and the parameter counts are reported side
by side. One step is forward, backward on the relative L2 loss and an Adam
update, on both sides. neuraloperator's model is loaded with our initial
weights, so the first step's losses must agree (the forward passes are the same
function). neuraloperator and a CPU build of torch are the ``bench`` extra.
"""

from __future__ import annotations

import types

import jax
import jax.numpy as jnp
import numpy as np
import optax

from reprojax.experiments import bench
from reprojax.experiments import common
from reprojax.models import fno

BATCH, WIDTH, MODES, DEPTH, PROJECTION = 20, 64, 16, 4, 128


def _flops(s: int) -> float:
  """FLOPs of one training step of ours: 3x the forward's dominant terms (matmuls and DFTs)."""
  per_sample = (2 * s * 2 * WIDTH  # lifting of (a, x)
                + DEPTH * (8 * s * MODES * WIDTH  # forward and inverse DFT of the kept modes
                           + 8 * MODES * WIDTH * WIDTH  # complex mixing of the modes
                           + 2 * s * WIDTH * WIDTH)  # pointwise W
                + 2 * s * WIDTH * PROJECTION + 2 * s * PROJECTION)  # projection
  return 3.0 * BATCH * per_sample


def _ours(x: np.ndarray, y: np.ndarray):
  """Our training step from seed-0 parameters: a call returning (loss, params, opt state)."""
  model = fno.FNO(modes=(MODES,), width=WIDTH, depth=DEPTH, projection=PROJECTION)
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
  return (lambda: step(params, state, xj, yj)), params


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
    r = (w["weight_0_real"] + 1j * w["weight_0_imag"]).transpose(1, 2, 0)  # (in, out, modes)
    sd[f"fno_blocks.convs.{i}.weight.tensor"] = torch.from_numpy(r.astype(np.complex64))
    # our pointwise W_l carries the layer's bias; neuraloperator puts it on the spectral conv
    sd[f"fno_blocks.convs.{i}.bias"] = torch.from_numpy(p[f"pointwise_{i}"]["bias"][:, None])
    sd[f"fno_blocks.fno_skips.{i}.conv.weight"] = conv(p[f"pointwise_{i}"]["kernel"])
  return sd


def _one_gelu(blocks, x, index=0, output_shape=None):
  """neuraloperator's block as the original FNO layer: sigma(K v + W v), sigma once."""
  skip = blocks.convs[index].transform(blocks.fno_skips[index](x), output_shape=output_shape)
  x = blocks.convs[index](x, output_shape=output_shape) + skip
  return blocks.non_linearity(x) if index < blocks.n_layers - 1 else x


def _theirs(s: int, x: np.ndarray, y: np.ndarray, params):
  """neuraloperator's step from the same parameters: a call returning the loss."""
  import torch  # pylint: disable=g-import-not-at-top
  from neuralop.models import FNO  # pylint: disable=g-import-not-at-top
  model = FNO(n_modes=(2 * MODES - 1,), in_channels=2, out_channels=1, hidden_channels=WIDTH,
              n_layers=DEPTH, lifting_channel_ratio=0, projection_channel_ratio=PROJECTION // WIDTH,
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
  grid = np.broadcast_to(np.linspace(0, 1, s, dtype=np.float32), x.shape)  # as models/_grid.py
  xt = torch.from_numpy(np.stack([x, grid], axis=1).copy())  # (B, 2, s): a and the grid
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
  return step, count


def _same_first_loss(ours, theirs):
  a, b = float(ours[0]), float(theirs)
  d = abs(a - b) / abs(b)
  return d <= 1e-4, (f"first step from shared weights: loss {a:.6f} vs {b:.6f} "
                     f"(relative {d:.1e} <= 1e-4)")


def workloads(full: bool) -> list[bench.Workload]:
  rows = []
  for s in (256, 1024) + ((4096,) if full else ()):
    rng = np.random.default_rng(s)
    x = rng.normal(size=(BATCH, s)).astype(np.float32)
    y = np.roll(x, 3, axis=1).astype(np.float32)
    ours, params = _ours(x, y)
    theirs, n_theirs = _theirs(s, x, y, params)
    n_ours = sum(int(np.prod(a.shape)) for a in jax.tree.leaves(params))
    rows.append(bench.Workload(
        paper="fno", name=f"training step (Adam), 1-D s = {s}, batch {BATCH}, width {WIDTH}, "
        f"{MODES} modes, {DEPTH} layers, {n_ours:,} parameters",
        ours=ours, peer=theirs, peer_name="neuraloperator FNO (PyTorch CPU; one GeLU a block)",
        peer_package="neuraloperator", agree=_same_first_loss,
        flops=_flops(s), repeats=10,
        note=(f"neuraloperator holds {n_theirs:,} parameters (complex ones counted twice), "
              "loaded from ours; FLOPs: 3x the forward's lifting, DFTs of the 16 kept modes, "
              "mode mixing, pointwise layers and projection") if s == 256 else ""))
  return rows
