r"""DynaDiff at medium scale: both families, the VAE and the generator trained longer
(not a registered scale; its results are committed in ``results/dynadiff/medium/``).

    python -m reprojax.experiments.dynadiff.main --config=experiments/dynadiff/configs/medium.py --workdir=/tmp/dynadiff_medium

Hardware and time: 2 CPU cores, about 8 minutes. The quick config with the
Lotka-Volterra family added, the VAE trained for 1,500 steps of 16 experts (quick:
600 of 8) and the generator twice as wide for twice as many steps.
"""

from reprojax.experiments.dynadiff.configs import quick


def get_config():
  c = quick.get_config()
  c.scale = "medium"
  c.families = ("oscillator", "lotka_volterra")
  c.vae_steps = 1500
  c.vae_batch = 16
  c.vae_lr = 2e-3
  c.gen_width = 256
  c.gen_steps = 4000
  return c
