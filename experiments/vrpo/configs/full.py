r"""VRPO at full scale: longer chains and training, more seeds (not part of `make reproduce`).

    python -m reprojax.experiments.vrpo.main --config=experiments/vrpo/configs/full.py --workdir=/tmp/vrpo_full

Hardware and time: a GPU; on 2 CPU cores an estimated 2-3 hours (not run: the quick config
takes 96 s in `make reproduce` beside another paper, the quick config on a 50-step chain took 2
min, and this is about 30 times its work with a wider network and larger evaluation). A 50-step
chain (the discrete chain's values closer to the continuous closed form), a wider head trained
longer, 2,000 fine-tuning steps per arm, ten seeds, three temperatures.
"""

from reprojax.experiments.vrpo.configs import quick


def get_config():
  c = quick.get_config()
  c.scale = "full"
  c.num_seeds = 10
  c.etas = (1.0, 0.5, 2.0)
  c.num_steps = 50
  c.segment = 8
  c.value_hidden = (128, 128)
  c.hidden = (128, 128)
  c.value_steps = 2400
  c.value_batch = 128
  c.steps = 2000
  c.batch = 256
  c.eval_samples = 2000
  c.curve_points = 9
  return c
