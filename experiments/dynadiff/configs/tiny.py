"""DynaDiff at tiny scale: the notebook's test run, not a reproduction.

About 20 s of CPU on 2 cores, most of it compiling: a zoo of 16 barely fine-tuned
experts, a VAE and a generator trained for a few dozen steps, 4 new environments per
region. Its figures and claims are noise.

    python -m reprojax.experiments.dynadiff.main --config=experiments/dynadiff/configs/tiny.py --workdir=/tmp/dynadiff_tiny
"""

from reprojax.experiments.dynadiff.configs import quick


def get_config():
  c = quick.get_config()
  c.scale = "tiny"
  c.num_seeds = 2
  c.expert_hidden = (8, 8)
  c.num_zoo_envs = 16
  c.zoo_trajs = 4
  c.traj_steps = 20
  c.base_steps = 100
  c.expert_steps = 50
  c.obs_per_env = 2
  c.vae_width = 16
  c.vae_latent = 4
  c.vae_heads = 2
  c.vae_steps = 30
  c.vae_batch = 4
  c.functional_states = 8
  c.gen_width = 32
  c.gen_layers = 2
  c.gen_steps = 30
  c.gen_batch = 8
  c.sample_steps = 4
  c.num_test_envs = 4
  c.eval_trajs = 2
  c.eval_steps = 10
  c.finetune_steps = 10
  c.coda_steps = 30
  c.coda_batch = 32
  c.adapt_steps = 10
  c.curve_steps = 20
  c.curve_every = 10
  c.timing_repeats = 1
  return c
