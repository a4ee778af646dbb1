r"""Per-step training time of del-NO against its plain backbone, side by side (issue item 4).

    python -m reprojax.experiments.del_no.benchmark [--resolution=256 --batch=32 --timed_steps=20]
    python -m reprojax.experiments.del_no.benchmark --sizes=full --dims=2 --resolution=64 --batch=20

For each backbone (FNO, U-Net, DeepONet) times one jitted training step (forward,
backward, optimizer update) of the backbone alone and of the same backbone with
K = 2 GL derivative channels (gl_terms = 16), and of the spectral variant (1-D);
prints a markdown table for the experiment README. ``--sizes`` picks the backbones'
sizes: the quick config's (with a 4-layer FNO) or the full config's (the paper's);
``--dims=2`` times the 2-D models (Darcy's: a non-periodic square, 2K + 1 channels).
"""

from __future__ import annotations

from absl import app
from absl import flags
import jax
import jax.numpy as jnp

from reprojax.experiments import bench
from reprojax.experiments.del_no import programs
from reprojax.experiments.del_no.configs import full as full_config
from reprojax.experiments.del_no.configs import quick
from reprojax.models import del_no

_RES = flags.DEFINE_integer("resolution", 256, "grid points")
_BATCH = flags.DEFINE_integer("batch", 32, "batch size")
_REPEATS = flags.DEFINE_integer("timed_steps", 20, "timed steps (median)")
_SIZES = flags.DEFINE_enum("sizes", "quick", ["quick", "full"], "backbone sizes: quick or full config's")
_DIMS = flags.DEFINE_enum("dims", "1", ["1", "2"], "spatial dimensions (2: Darcy's square)")


def workloads(full: bool) -> list[bench.Workload]:
  """``make bench``'s rows: a del-NO (GL, K = 2) training step against its plain backbone's.

  The paper's cost claim is an overhead over the backbone, so the peer is the
  backbone itself at the same shapes (quick sizes, a 4-layer FNO; 1-D, grid 256,
  batch 32); the two are different models, so outputs are not compared.
  """
  config = full_config.get_config() if full else quick.get_config()
  if not full:
    config.backbones.fno_depth = 4
  x = jax.random.normal(jax.random.key(0), (32, 256))
  y = jnp.roll(x, 3, axis=-1)
  rows = []
  for name in ("fno", "unet", "deeponet"):
    base, opt = programs.make_model(name, config, 2, False, dims=1, periodic=True)
    aug, opt_aug = programs.make_model(name, config, 2, True, dims=1, periodic=True)
    rows.append(bench.Workload(
        paper="del_no", name=f"training step, {name} backbone + 2 GL derivative channels, "
        "1-D grid 256, batch 32",
        ours=programs.train_step_call(aug, opt_aug, x, y, 1),
        peer=programs.train_step_call(base, opt, x, y, 1),
        peer_name=f"plain {name} backbone", why_not_compared="different models (the row "
        "is del-NO's overhead over its backbone)", repeats=10))
  return rows


def main(argv):
  del argv
  config = full_config.get_config() if _SIZES.value == "full" else quick.get_config()
  if _SIZES.value == "quick":
    config.backbones.fno_depth = 4
  dims = int(_DIMS.value)
  shape = (_BATCH.value,) + (_RES.value,) * dims
  x = jax.random.normal(jax.random.key(0), shape)
  y = jnp.roll(x, 3, axis=-1)
  print(f"device: {jax.devices()[0].device_kind}, {dims}-D grid {_RES.value}, batch {_BATCH.value}, "
        f"{_SIZES.value} sizes")
  print("| backbone | backbone ms/step | del-NO GL ms/step | overhead | del-NO spectral ms/step | overhead |")
  print("|---|---|---|---|---|---|")
  periodic = dims == 1
  for name in ("fno", "unet", "deeponet"):
    base, opt = programs.make_model(name, config, 2, False, dims=dims, periodic=periodic)
    t_base = programs.step_time(base, opt, x, y, 1, _REPEATS.value)
    aug, opt_aug = programs.make_model(name, config, 2, True, dims=dims, periodic=periodic)
    t_gl = programs.step_time(aug, opt_aug, x, y, 1, _REPEATS.value)
    if periodic:
      spec = del_no.DelNO(programs.make_backbone(name, config.backbones), method="spectral")
      t_sp = programs.step_time(spec, opt_aug, x, y, 1, _REPEATS.value)
      sp = f"{1e3 * t_sp:.2f} | {100 * (t_sp / t_base - 1):+.0f}%"
    else:
      sp = "- | -"
    print(f"| {name} | {1e3 * t_base:.2f} | {1e3 * t_gl:.2f} | {100 * (t_gl / t_base - 1):+.0f}% "
          f"| {sp} |")


if __name__ == "__main__":
  app.run(main)
