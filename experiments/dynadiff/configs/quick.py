r"""DynaDiff at quick scale (part of `make reproduce`).

    python -m reprojax.experiments.dynadiff.main --config=experiments/dynadiff/configs/quick.py --workdir=/tmp/dynadiff

Hardware and time: 2 CPU cores, about 1.5 minutes (87 s in `make reproduce`, beside another
paper). For each family (damped oscillator, Lotka-Volterra): a zoo of 64 experts fine-tuned
from one base predictor, the weight-graph VAE (with and without attention, with and without the
functional loss) and the latent flow generator (prompter-conditioned, and conditioned on the
true parameters) trained for 3 seeds at once, then 16 new environments inside the training
range and 16 outside it, each seen through one short observed sequence: generated experts
against the base model, the nearest zoo expert, fine-tuning on the sequence and CoDA-style
context adaptation, by rollout error. Reproduces (in kind) the paper's "10.78% lower average
prediction error" and its ablations.
"""

import ml_collections


def get_config() -> ml_collections.ConfigDict:
  c = ml_collections.ConfigDict()
  c.scale = "quick"
  c.seed = 0  # environments, trajectories and every key come from it
  c.num_seeds = 3  # replicas of everything trained after the zoo (mean +- s.e. over them)
  c.mesh = ml_collections.ConfigDict({"data": -1})  # axis name -> size (-1: the rest)
  c.families = ("oscillator",)  # data.dynadiff.FAMILIES (configs/medium.py: both)
  # --- the zoo: experts fine-tuned from one base predictor (models.dynadiff.ExpertMLP)
  c.expert_hidden = (16, 16)  # the predictor's hidden widths (34 neurons: graph nodes)
  c.num_zoo_envs = 64  # environments of the zoo (uniform in the training box)
  c.zoo_trajs = 8  # trajectories per zoo environment
  c.traj_steps = 40  # steps per trajectory (dt = 0.1)
  c.base_steps = 1500  # Adam steps of the base predictor on all zoo environments' data
  c.base_lr = 3e-3
  c.expert_steps = 1000  # Adam steps fine-tuning the base into each environment's expert
  c.expert_lr = 2e-3
  c.expert_batch = 64  # transition pairs per step
  # --- the prompt: a short observed sequence of the environment
  c.obs_steps = 24  # observed transitions (25 states, 2.4 time units)
  c.obs_per_env = 4  # observed sequences per zoo environment (prompts for training)
  c.num_freqs = 8  # Fourier bins of the prompter's spectral features
  # --- the weight-graph VAE (models.dynadiff.WeightGraphVAE)
  c.vae_width = 32
  c.vae_latent = 8  # latent features per node
  c.vae_heads = 4
  c.vae_layers = 1  # attention blocks in the encoder and in the decoder
  c.vae_steps = 600
  c.vae_lr = 3e-3
  c.vae_batch = 8  # experts per step
  c.kl_weight = 1e-4
  c.functional_weight = 10.0  # lambda_f of the functional loss (relative to the recon term)
  c.functional_states = 32  # states of the expert's environment per functional loss
  # --- the latent flow generator, the prompter inside: "mlp" (models.flow_mlp.CondFlowMLP
  # over the flattened latents) or "dit" (models.dynadiff.LatentDenoiser over node tokens)
  c.generator = "mlp"
  c.gen_width = 128  # hidden width (MLP) or token width (DiT)
  c.gen_heads = 4  # DiT only
  c.gen_layers = 3  # hidden layers (MLP) or blocks (DiT)
  c.gen_steps = 2000
  c.gen_lr = 1e-3
  c.gen_batch = 32
  c.sample_steps = 20  # Euler steps of the flow ODE
  # --- new environments and the evaluation
  c.num_test_envs = 16  # per region (inside and outside the training box)
  c.eval_trajs = 4  # rollouts per test environment, from fresh initial states
  c.eval_steps = 50  # rollout horizon (5 time units)
  # --- baselines
  c.finetune_steps = 100  # full-batch Adam steps on the observed sequence, from the base
  c.finetune_lr = 3e-3
  c.curve_steps = 1000  # fine-tuning to DynaDiff's error: up to this many steps...
  c.curve_every = 25  # ...its rollout error read every this many
  c.timing_repeats = 5  # timed calls of generation and of fine-tuning (the median)
  c.context_dim = 2  # CoDA's context vector xi
  c.coda_steps = 1500  # meta-training of theta_0, W and the zoo's contexts
  c.coda_lr = 3e-3
  c.coda_batch = 256  # transition pairs per step (from random zoo environments)
  c.adapt_steps = 100  # full-batch Adam steps on xi for a new environment
  c.adapt_lr = 3e-2
  return c
