r"""DynaDiff at the paper's scale of zoo and networks (not run here).

    python -m reprojax.experiments.dynadiff.main --config=experiments/dynadiff/configs/full.py --workdir=/tmp/dynadiff_full

Hardware and time: one accelerator of the H100 class, an estimated 3-5 hours (not run:
2 CPU cores would take days). A zoo of 1,024 environments per family with 32-wide
experts trained to convergence, the VAE at width 256 with 4 attention blocks (the
public code: internal width 1,024, 4 blocks), a DiT generator over the latent node
tokens (the paper's backbone), 5 seeds, 128 new environments per region. Reproduces
the paper's "10.78% lower average prediction error than competitive baselines" and its
ablations, on our ODE families. Its main step (generation and scoring, replicas split
over ``data``) is lowered on an 8-device mesh by ``tests/experiments/test_papers.py``.
"""

from reprojax.experiments.dynadiff.configs import quick


def get_config():
  c = quick.get_config()
  c.scale = "full"
  c.num_seeds = 5
  c.families = ("oscillator", "lotka_volterra")
  c.expert_hidden = (32, 32)
  c.num_zoo_envs = 1024
  c.zoo_trajs = 16
  c.traj_steps = 100
  c.base_steps = 20000
  c.expert_steps = 5000
  c.obs_steps = 48
  c.obs_per_env = 16
  c.vae_width = 256
  c.vae_latent = 32
  c.vae_heads = 8
  c.vae_layers = 4
  c.vae_steps = 50000
  c.vae_batch = 64
  c.functional_states = 128
  c.generator = "dit"
  c.gen_width = 256
  c.gen_heads = 8
  c.gen_layers = 6
  c.gen_steps = 100000
  c.gen_batch = 128
  c.sample_steps = 50
  c.num_test_envs = 128
  c.eval_trajs = 16
  c.eval_steps = 100
  c.finetune_steps = 500
  c.coda_steps = 20000
  c.coda_batch = 1024
  c.adapt_steps = 500
  c.curve_steps = 5000
  c.curve_every = 100
  return c
