r"""del-NO between quick and full, sized for the 2-core CPU: is the quick shortfall under-training?

    python -m reprojax.experiments.del_no.main --config=experiments/del_no/configs/medium_cpu.py \
        --workdir=/tmp/del_no_medium

The quick config trains 200 steps on 256 pairs; its loss curves (README) show the FNO
cells still falling and the DeepONet cells overfitting. This config keeps the quick
models and the 64-point grid and changes only what those two explanations point at:
10x the steps (2000), 4x the training pairs (1000), and the four 1-D PDEs of the full
grid (advection m=1, heat m=2, Burgers m=2, KdV m=3) x FNO, DeepONet x clean/noisy:
16 cells, 3 seeds, and the three sweeps at 2000 steps. No Darcy (its 2-D cells are what
make the full grid GPU-sized), so there is no x/y-order claim.

Hardware and time: 2 CPU cores, 415 s wall (its first run, including generating the
advection and heat data). Results: results/del_no/medium_cpu/ and experiments/del_no/README.md.
"""

from reprojax.experiments.del_no.configs import quick


def get_config():
  c = quick.get_config()
  c.scale = "medium_cpu"
  c.pdes = ("advection", "heat", "burgers", "kdv")
  c.n_train = 1000
  c.n_test = 200
  c.steps = 2000
  c.sweep_ns = (100, 200, 300, 600, 1000)
  return c
