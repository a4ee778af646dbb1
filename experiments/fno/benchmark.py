r"""Benchmark: one FNO training step, ours (Flax, XLA) against neuraloperator's (PyTorch, CPU).

    python -m reprojax.experiments.bench --papers=fno [--full]

The 1-D Burgers shapes of the paper: batch 20, width 64, 16 Fourier modes, 4
Fourier layers, a pointwise projection of width 128, grid s = 256 and s = 1024
(``--full`` adds s = 4096). neuraloperator's ``FNO`` is configured as close to
the original architecture as its options allow (no channel MLPs, linear skips,
a one-layer lifting, the grid appended as an input channel, ``n_modes = 31``,
which keeps the same 16 rfft modes), and the parameter counts are reported side
by side. One step is forward, backward on the relative L2 loss and an Adam
update, on both sides. The two initialise differently, so their outputs are not
compared; the row compares cost at equal shapes and (nearly) equal parameter
counts. neuraloperator and a CPU build of torch are the ``bench`` extra.
"""

from __future__ import annotations

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


def _ours(s: int, x: np.ndarray, y: np.ndarray, method: str = "dft"):
  model = fno.FNO(modes=(MODES,), width=WIDTH, depth=DEPTH, projection=PROJECTION,
                  spectral_method=method)
  params = model.init(jax.random.key(0), jnp.asarray(x[:1]))
  opt = optax.adam(1e-3)
  state = opt.init(params)

  @jax.jit
  def step(p, o, xb, yb):
    g = jax.grad(lambda q: jnp.mean(common.relative_l2(model.apply(q, xb), yb)))(p)
    upd, o = opt.update(g, o, p)
    return optax.apply_updates(p, upd), o

  xj, yj = jnp.asarray(x), jnp.asarray(y)
  count = sum(int(np.prod(a.shape)) for a in jax.tree.leaves(params))
  return (lambda: step(params, state, xj, yj)), count


def _theirs(s: int, x: np.ndarray, y: np.ndarray):
  import torch  # pylint: disable=g-import-not-at-top
  from neuralop.models import FNO  # pylint: disable=g-import-not-at-top
  torch.manual_seed(0)
  model = FNO(n_modes=(2 * MODES - 1,), in_channels=2, out_channels=1, hidden_channels=WIDTH,
              n_layers=DEPTH, lifting_channel_ratio=0, projection_channel_ratio=PROJECTION // WIDTH,
              positional_embedding=None, use_channel_mlp=False, fno_skip="linear")
  grid = np.broadcast_to(np.linspace(0, 1, s, dtype=np.float32), x.shape)
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

  return step, sum(p.numel() * (2 if p.is_complex() else 1) for p in model.parameters())


def workloads(full: bool) -> list[bench.Workload]:
  rows = []
  for s in (256, 1024) + ((4096,) if full else ()):
    rng = np.random.default_rng(s)
    x = rng.normal(size=(BATCH, s)).astype(np.float32)
    y = np.roll(x, 3, axis=1).astype(np.float32)
    ours, n_ours = _ours(s, x, y)
    theirs, n_theirs = _theirs(s, x, y)
    rows.append(bench.Workload(
        paper="fno", name=f"training step (Adam), 1-D s = {s}, batch {BATCH}, width {WIDTH}, "
        f"{MODES} modes, {DEPTH} layers",
        ours=ours, peer=theirs, peer_name="neuraloperator FNO (PyTorch CPU)",
        peer_package="neuraloperator",
        why_not_compared=f"the two initialise differently; parameters {n_ours:,} (ours) and "
        f"{n_theirs:,} (neuraloperator)",
        flops=_flops(s), repeats=10,
        note="FLOPs: 3x the forward's lifting, DFTs of the 16 kept modes, mode mixing, "
             "pointwise layers and projection" if s == 256 else ""))
  return rows
