"""DynaDiff at toy size: generating a predictor's weights for an environment it has never seen.

For each ODE family of :mod:`reprojax.data.dynadiff` (damped oscillator, Lotka-Volterra),
a predictor is the one-step map of :class:`reprojax.models.dynadiff.ExpertMLP`, judged by
the normalised error of its autoregressive rollouts from fresh initial states
(:func:`reprojax.algorithms.dynadiff.rollout_error`). The run:

1. **Zoo** (shared by the seeds: the paper's one-time offline cost): ``num_zoo_envs``
   environments uniform in the training box, ``zoo_trajs`` trajectories each; a base
   predictor fitted on all of them, then one expert per environment fine-tuned from it
   (the experts vmapped, one compiled program), so the zoo's weights are aligned. The
   zoo is kept as an orbax checkpoint under ``<workdir>/zoo/<family>``: a rerun in the
   same workdir restores it (:func:`reprojax.experiments.train.cached_pytree`).
2. **Prompts**: ``obs_per_env`` short observed sequences per zoo environment (``obs_steps``
   transitions from random initial states), summarised by
   :func:`reprojax.algorithms.dynadiff.dynamics_features` and standardised over the zoo.
3. **Weight-graph VAE** (:class:`reprojax.models.dynadiff.WeightGraphVAE`) on the zoo's
   normalised weight graphs, with the functional loss on states of each expert's
   environment (relative to the experts' mean squared one-step change). Replicas: seeds x
   {full, without the functional loss, without attention}, one vmapped program.
4. **Latent generator**: flow matching over the VAE's latent node tokens
   (:class:`reprojax.models.dynadiff.LatentDenoiser`) conditioned by the prompter on a
   random observed sequence of the expert's environment. Replicas (:data:`GEN_VARIANTS`,
   one vmapped program): seeds x {full, on the no-functional VAE, on the no-attention VAE,
   conditioned on the true parameters instead of the prompt (an oracle), without the
   prompter}. "Without the prompter" is the paper's own ablation, read here as: the
   generator must still learn the environment from the observed sequence, so the sequence
   itself (the states the prompter reads; a PDE's low spatial modes), standardised per
   coordinate over the zoo's prompts and flattened, enters the generator's own learned
   condition layers (the flow MLP's condition MLP, the DiT's prompter MLP) in place of the
   physical and spectral features: a plain learned encoder of the same size, so the
   ablation removes the features and nothing else (a separate sequence encoder would
   add capacity the full generator lacks, and could not share its vmapped program).
   The paper's ablation table is not among our sources; this is our reading of it.
5. **New environments**: ``num_test_envs`` inside the training box and as many outside
   it (the first parameter beyond its upper end). Each seed observes each through one
   fresh sequence; generated experts (and, as the issue's control, experts generated from
   another environment's prompt: the prompts shuffled within a region) against
   * ``base``: the base predictor, unadapted;
   * ``nearest``: the zoo expert of the nearest environment in (standardised) true
     parameters, an oracle (``nearest_features``: nearest in prompt features, reported);
   * ``finetune``: the base fine-tuned on the observed sequence (``finetune_steps``
     full-batch Adam steps);
   * ``coda``: CoDA-style context adaptation, ``theta = theta_0 + W xi`` meta-trained on
     the zoo's data with one ``xi`` per zoo environment, then ``xi`` fitted on the
     observed sequence (``adapt_steps``).

6. **The zoo reproduced**: each zoo environment seen through a fresh observed sequence
   per seed, an expert generated from it by every generator replica, scored on the same
   fresh trajectories as the zoo's own expert; and the VAE's decodings of the zoo (the
   latent means) on them. A generator that cannot reproduce the experts it was trained on
   cannot beat a baseline as good as they are (``generator_reproduces_zoo``).

7. **Amortisation**: fine-tuning's rollout error every ``curve_every`` steps up to
   ``curve_steps``, the first count that reaches DynaDiff's error, and the compiled cost
   per environment of generating an expert against one fine-tuning step (medians of
   ``timing_repeats`` calls).

Metrics are means over test environments per seed, then mean +- s.e. over seeds; paired
differences between methods are taken per seed. Departures from the paper (README):
flow matching (the suite's sampler) in place of DDPM; MLP experts of 2-D ODEs in place of
FNOs of flows; our own reconstruction of the prompter's features.

The networks and compiled stages are in :mod:`.programs`, the claims in :mod:`.claims`; this
module runs them: :func:`run_family` per family, :func:`summarise` into the metrics.
"""

from __future__ import annotations

import os
import time
from typing import Mapping

import jax
import jax.numpy as jnp
import ml_collections
import numpy as np

from reprojax.algorithms import dynadiff as dd
from reprojax.data import dynadiff as dyn_data
from reprojax.experiments import common
from reprojax.experiments import sharding
from reprojax.experiments import train
from reprojax.experiments.dynadiff import plots
from reprojax.experiments.dynadiff import programs as prog
from reprojax.experiments.dynadiff.programs import ABLATIONS
from reprojax.experiments.dynadiff.programs import BASELINES
from reprojax.experiments.dynadiff.programs import GEN_METHODS
from reprojax.experiments.dynadiff.programs import GEN_VARIANTS
from reprojax.experiments.dynadiff.programs import METHODS
from reprojax.experiments.dynadiff.programs import REGIONS
from reprojax.experiments.dynadiff.programs import VAE_VARIANTS

_POS = (0.5, float("inf"))
CONFIG_RANGES = {k: _POS for k in (
    "num_seeds", "num_zoo_envs", "zoo_trajs", "traj_steps", "base_steps", "expert_steps",
    "expert_batch", "obs_steps", "obs_per_env", "num_freqs", "vae_width", "vae_latent",
    "vae_heads", "vae_layers", "vae_steps", "vae_batch", "functional_states", "gen_width",
    "gen_heads", "gen_layers", "gen_steps", "gen_batch", "sample_steps", "num_test_envs",
    "eval_trajs", "eval_steps", "finetune_steps", "context_dim", "coda_steps", "coda_batch",
    "adapt_steps", "curve_steps", "curve_every", "timing_repeats")}
CONFIG_RANGES.update({"kl_weight": (0.0, float("inf")),
                      "functional_weight": (0.0, float("inf"))})


def _check_config(config) -> None:
  for name in config.families:
    dyn_data.any_family(name)
  prompt_dims = [2 * int(config.prompt_modes) if name in dyn_data.PDE_FAMILIES else 2
                 for name in config.families]
  need = max(dd.min_length(int(config.num_freqs), d) for d in prompt_dims)
  if int(config.obs_steps) + 1 < need:
    raise ValueError(f"obs_steps + 1 = {int(config.obs_steps) + 1} observed states is too short "
                     f"for the prompter with num_freqs={int(config.num_freqs)}: it needs {need}")


def run_family(config, programs: prog.Programs, name: str, seed: int, workdir: str
               ) -> dict[str, np.ndarray]:
  """One family's whole run; per-seed arrays of every method's mean test error by region,
  and the zoo's and the training's diagnostics."""
  c, nets = config, programs.nets
  fam_index = (list(dyn_data.FAMILIES) + list(dyn_data.PDE_FAMILIES)).index(name)
  root = jax.random.fold_in(jax.random.key(seed), fam_index)
  k_base, k_zoo, k_vae, k_gen, k_sample, k_ft, k_coda = jax.random.split(root, 7)
  r = int(c.num_seeds)
  n, steps = int(c.num_zoo_envs), int(c.traj_steps)
  ds = seed * 100 + fam_index

  # 1. the zoo
  zoo = dyn_data.environment_data(name, dyn_data.sample_environments(name, n, "train", ds),
                                  int(c.zoo_trajs), steps, ds)
  x_N, y_N = jax.vmap(prog.pairs)(jnp.asarray(zoo.trajs_ExMxTxD))  # (N, P, D)
  scale = jnp.mean(jnp.sum((y_N - x_N) ** 2, -1))

  def train_zoo():
    base_params, _ = programs.base_fit(k_base, x_N.reshape(-1, nets.dim),
                                       y_N.reshape(-1, nets.dim), scale)
    base = nets.graph_of(base_params)
    experts, _ = programs.expert_fit(jax.random.split(k_zoo, n), x_N, y_N, base, scale)
    return {"base": base, "experts": experts}

  zoo_w = train.cached_pytree(os.path.join(workdir, "zoo", name),
                              prog.zoo_fingerprint(config, name), train_zoo)
  base_flat, zoo_flat = jnp.asarray(zoo_w["base"]), jnp.asarray(zoo_w["experts"])
  # zoo quality on fresh trajectories of the zoo's own environments
  own = dyn_data.environment_data(name, zoo.params_ExP, int(c.eval_trajs), int(c.eval_steps),
                                  ds + 7)
  own_x0, own_true = own.trajs_ExMxTxD[:, :, 0], own.trajs_ExMxTxD
  zoo_own_err = np.asarray(programs.errors(zoo_flat, own_x0, own_true))
  base_own_err = np.asarray(programs.errors(jnp.broadcast_to(base_flat, zoo_flat.shape),
                                            own_x0, own_true))

  # 2. prompts of the zoo: the prompter's features and (for the replica without the
  # prompter) the raw sequences, each standardised per coordinate over the zoo's sequences
  zoo_obs = dyn_data.environment_data(
      name, np.repeat(zoo.params_ExP, int(c.obs_per_env), 0), 1, int(c.obs_steps), ds + 3)
  prompts = prog.zoo_prompts(programs, zoo_obs.trajs_ExMxTxD[:, 0], zoo.params_ExP,
                             int(c.obs_per_env))

  # 3. the VAE replicas (seeds x variants)
  norm = dd.fit_normalizer(zoo_flat)
  zoo_norm = dd.normalize(norm, zoo_flat)
  func_x, func_y = prog.functional_states(nets, x_N, zoo_flat, int(c.functional_states),
                                          [ds, 5])
  v = len(VAE_VARIANTS)
  vae_keys = jnp.repeat(prog.seed_keys(k_vae, r), v, axis=0)  # replica = seed * v + variant
  fw = np.tile(np.array([float(c.functional_weight), 0.0, float(c.functional_weight)],
                        np.float32), r)
  gate = np.tile(np.array([1.0, 1.0, 0.0], np.float32), r)
  vae_params, zoo_latents, vae_loss, vae_recon, vae_decoded = programs.vae_fit(
      vae_keys, fw, gate, zoo_norm, norm, func_x, func_y, scale, own_x0, own_true)

  # 4. the generator replicas (seeds x GEN_VARIANTS)
  g = len(GEN_VARIANTS)
  vae_of = np.array([[s_ * v + gv[1] for gv in GEN_VARIANTS] for s_ in range(r)]).ravel()
  gen_keys = jnp.repeat(prog.seed_keys(k_gen, r), g, axis=0)
  zoo_cond = np.tile(prog.variant_conditions(prompts.feats_NxOxC, prompts.params_NxC[:, None],
                                             prompts.raw_NxOxC),
                     (r, 1, 1, 1))  # (R*g, N, O, C): replica = seed * g + variant
  gen_params, lat_stats, gen_loss = programs.gen_fit(gen_keys, zoo_latents[vae_of], zoo_cond)
  vae_sel = prog.take(vae_params, vae_of)
  # the CoDA baseline's theta_0 and W, meta-trained on the zoo's data (one per seed)
  theta0, basis, coda_loss = programs.coda_fit(prog.seed_keys(k_coda, r), base_flat, x_N, y_N,
                                               scale)

  # 5. new environments, observed once per seed
  out = {"zoo_own_err": zoo_own_err.mean(), "base_own_err": base_own_err.mean(),
         "vae_recon": np.asarray(vae_recon).reshape(r, v),
         "vae_decoded": np.asarray(vae_decoded).mean(-1).reshape(r, v),
         "gen_loss": np.asarray(gen_loss), "coda_loss": np.asarray(coda_loss)}
  for region in REGIONS:
    m = int(c.num_test_envs)
    env = dyn_data.sample_environments(name, m, region, ds + 1)
    test = dyn_data.environment_data(name, env, int(c.eval_trajs), int(c.eval_steps), ds + 2)
    x0, true = test.trajs_ExMxTxD[:, :, 0], test.trajs_ExMxTxD
    x0_r, true_r = np.tile(x0, (r, 1, 1)), np.tile(true, (r, 1, 1, 1))  # (R*E, ...)
    obs = np.stack([dyn_data.environment_data(name, env, 1, int(c.obs_steps),
                                              ds + 1000 * (k + 1)).trajs_ExMxTxD[:, 0]
                    for k in range(r)])  # (R, E, T_obs, D): each seed's observed sequence
    cond, raw = (a.reshape(r, m, -1) for a in prog.observed_conditions(
        programs, prompts, obs.reshape(r * m, *obs.shape[2:])))
    true_pad = prog.params_condition(nets, prompts, env)
    perm = prog.derangement(m, [ds, 9, REGIONS.index(region)])
    cond_g = np.concatenate([prog.variant_conditions(cond[s_], true_pad, raw[s_])
                             for s_ in range(r)])  # (R*g, E, C)
    sample_keys = jnp.repeat(
        prog.seed_keys(jax.random.fold_in(k_sample, REGIONS.index(region)), r), g, axis=0)
    errs = np.asarray(programs.generate(sample_keys, gen_params, vae_sel, gate[vae_of], lat_stats,
                                        cond_g, norm, x0, true)).reshape(r, g, m)
    full = np.arange(r) * g  # the full variant's replica of each seed
    per = {meth: errs[:, i] for i, meth in enumerate(GEN_METHODS)}
    per["shuffled"] = np.asarray(programs.generate(  # (R, E)
        sample_keys[full], prog.take(gen_params, full), prog.take(vae_params, vae_of[full]),
        gate[vae_of[full]], lat_stats[full], cond[:, perm], norm, x0, true))
    # baselines
    base_err = np.asarray(programs.errors(jnp.broadcast_to(base_flat, (m,) + base_flat.shape),
                                          x0, true))
    per["base"] = np.broadcast_to(base_err, (r, m))
    per["nearest"], per["nearest_features"] = prog.nearest_errors(
        programs, zoo_flat, zoo.params_ExP, prompts.feats_NxOxC.mean(1), env, cond, x0, true)
    obs_x, obs_y = jax.vmap(prog.pairs)(jnp.asarray(obs.reshape(r * m, 1, *obs.shape[2:])))
    ft_keys = prog.seed_keys(jax.random.fold_in(k_ft, REGIONS.index(region)), r * m)
    per["finetune"] = np.asarray(programs.finetune(
        ft_keys, obs_x, obs_y, base_flat, scale, x0_r, true_r)).reshape(r, m)
    # fine-tuning to DynaDiff's error: the first step count on the curve that reaches it
    curve = np.asarray(programs.finetune_curve(
        ft_keys, obs_x, obs_y, base_flat, scale, x0_r, true_r)).reshape(r, m, -1).mean(axis=(0, 1))
    out[f"finetune_curve_{region}"] = curve
    out[f"steps_to_match_{region}"] = prog.steps_to_match(curve, per["dynadiff"].mean(),
                                                          int(c.curve_every))
    rep = np.repeat(np.arange(r), m)
    per["coda"] = np.asarray(programs.coda_adapt(
        ft_keys, theta0[rep], basis[rep], obs_x, obs_y, scale, x0_r, true_r)).reshape(r, m)
    for k, a in per.items():
      out[f"{k}_{region}"] = np.asarray(a).mean(1)  # (R,): mean over the region's envs
      out[f"{k}_{region}_envs"] = np.asarray(a).mean(0)  # (E,): mean over seeds, for plots
    out[f"params_{region}"] = env
  # 6. the zoo reproduced: each zoo environment seen through a fresh sequence per seed, an
  # expert generated from it by every replica, scored on the zoo's own fresh trajectories
  # (the experts' own error's trajectories), in chunks of num_test_envs environments (the
  # compiled shape of the test environments: no new program)
  seen = np.stack([dyn_data.environment_data(name, zoo.params_ExP, 1, int(c.obs_steps),
                                             ds + 1000 * (k + 1) + 50).trajs_ExMxTxD[:, 0]
                   for k in range(r)])  # (R, N, T_obs, D)
  seen_feats, seen_raw = prog.observed_conditions(programs, prompts,
                                                  seen.reshape(r * n, *seen.shape[2:]))
  seen_cond = np.concatenate([prog.variant_conditions(f_, prompts.params_NxC, w_)
                              for f_, w_ in zip(seen_feats.reshape(r, n, -1),
                                                seen_raw.reshape(r, n, -1))])  # (R*g, N, C)
  zoo_gen = prog.generate_in_chunks(
      programs, k_sample, len(REGIONS), r, int(c.num_test_envs), gen_params, vae_sel,
      gate[vae_of], lat_stats, seen_cond, norm, own_x0, own_true).reshape(r, g, n)
  for i, meth in enumerate(GEN_METHODS):
    out[f"zoo_gen_{meth}"] = zoo_gen[:, i].mean(1)  # (R,): mean over the zoo's environments

  # Deployment cost per new environment, both sides compiled and timed on m environments:
  # generating an expert (prompt features, sampling, decoding) against one step of
  # fine-tuning the base on the observed sequence.
  feats_fn = programs.features
  one = np.arange(1)  # the first seed's full generator, picked once, outside the timing
  gen1, vae1 = prog.take(gen_params, one), prog.take(vae_params, vae_of[one])

  def generate_m():
    cond1 = prog.standardise(feats_fn(obs[0]), prompts.f_mean, prompts.f_std)[None]
    return programs.generate(sample_keys[one], gen1, vae1, gate[one], lat_stats[one], cond1,
                             norm, x0, true)

  def finetune_m():
    return programs.finetune(ft_keys[:m], obs_x[:m], obs_y[:m], base_flat, scale, x0, true)

  out["generate_s"] = common.median_seconds(generate_m, repeats=int(c.timing_repeats)) / m
  out["finetune_step_s"] = (common.median_seconds(finetune_m, repeats=int(c.timing_repeats))
                            / (m * int(c.finetune_steps)))
  return out


def summarise(config, per_family: Mapping[str, Mapping[str, np.ndarray]]) -> dict[str, float]:
  """Flat metrics: every method's error (mean, s.e. over seeds) per family and region, the
  improvement over the best baseline and the paired differences the claims read; the zoo
  reproduced (``<family>_zoo_gen_<method>``: each generator replica's error in the zoo's own
  environments from a fresh prompt, beside ``<family>_zoo_own_err``, their ratio for the full
  generator, and ``<family>_vae_decoded_<variant>``, the VAE's decodings of the zoo)."""
  m: dict[str, float] = {"num_seeds": float(config.num_seeds),
                         "num_families": float(len(per_family))}
  improvements = []
  for fam, out in per_family.items():
    m[f"{fam}_zoo_own_err"] = float(out["zoo_own_err"])
    m[f"{fam}_base_own_err"] = float(out["base_own_err"])
    for i, name in enumerate(VAE_VARIANTS):
      m[f"{fam}_vae_recon_{name}"] = float(np.mean(out["vae_recon"][:, i]))
      m[f"{fam}_vae_decoded_{name}"] = float(np.mean(out["vae_decoded"][:, i]))
    for meth in GEN_METHODS:  # the zoo's environments, from a fresh prompt
      a = out[f"zoo_gen_{meth}"]
      m[f"{fam}_zoo_gen_{meth}"] = float(np.mean(a))
      m[f"{fam}_zoo_gen_{meth}_se"] = float(common.standard_error(a)) if len(a) > 1 else 0.0
    m[f"{fam}_zoo_gen_ratio"] = m[f"{fam}_zoo_gen_dynadiff"] / m[f"{fam}_zoo_own_err"]
    for region in REGIONS:
      for meth in METHODS:
        a = out[f"{meth}_{region}"]
        m[f"{fam}_{meth}_{region}"] = float(np.mean(a))
        m[f"{fam}_{meth}_{region}_se"] = float(common.standard_error(a)) if len(a) > 1 else 0.0
      best = min(BASELINES, key=lambda b: m[f"{fam}_{b}_{region}"])
      m[f"{fam}_best_baseline_{region}"] = float(BASELINES.index(best))
      dd_err = out[f"dynadiff_{region}"]
      for other in BASELINES + ("shuffled",) + ABLATIONS:
        diff = out[f"{other}_{region}"] - dd_err  # > 0: DynaDiff better
        m[f"{fam}_gap_{other}_{region}"] = float(np.mean(diff))
        m[f"{fam}_gap_{other}_{region}_se"] = (float(common.standard_error(diff))
                                               if len(diff) > 1 else 0.0)
      imp = 1.0 - m[f"{fam}_dynadiff_{region}"] / m[f"{fam}_{best}_{region}"]
      m[f"{fam}_improvement_{region}"] = imp
      improvements.append(imp)
    m[f"{fam}_generate_s"] = float(out["generate_s"])
    m[f"{fam}_finetune_step_s"] = float(out["finetune_step_s"])
    for region in REGIONS:
      k = float(out[f"steps_to_match_{region}"])
      m[f"{fam}_steps_to_match_{region}"] = k if np.isfinite(k) else -1.0  # -1: never
      m[f"{fam}_finetune_match_s_{region}"] = (k * out["finetune_step_s"] if np.isfinite(k)
                                               else -1.0)
    for other in ABLATIONS:
      # the two regions' paired differences averaged per seed, then mean and s.e.
      diff = np.mean([out[f"{other}_{r}"] - out[f"dynadiff_{r}"] for r in REGIONS], axis=0)
      m[f"{fam}_gap_{other}_pooled"] = float(np.mean(diff))
      m[f"{fam}_gap_{other}_pooled_se"] = (float(common.standard_error(diff))
                                           if len(diff) > 1 else 0.0)
  m["mean_improvement"] = float(np.mean(improvements))
  return m


def run(config: ml_collections.ConfigDict, workdir: str) -> dict[str, float]:
  _check_config(config)
  mesh = sharding.config_mesh(config)
  programs_by_kind = {}  # the ODE families share their programs (same shapes)
  per_family, timings = {}, {}
  for name in config.families:
    kind = name if name in dyn_data.PDE_FAMILIES else "ode"
    if kind not in programs_by_kind:
      programs_by_kind[kind] = prog.Programs(config, mesh, name)
    programs = programs_by_kind[kind]
    t0 = time.perf_counter()
    per_family[name] = run_family(config, programs, name, int(config.seed), workdir)
    timings[name] = time.perf_counter() - t0
  metrics = summarise(config, per_family)
  for name, t in timings.items():
    metrics[f"{name}_wall_s"] = t
  plots.errors_figure(workdir, config, per_family, metrics)
  return metrics


def is_timing(name: str) -> bool:
  """Whether metric ``name`` is a wall-clock measurement (a rerun may change it)."""
  return name.endswith(("_wall_s", "_generate_s", "_finetune_step_s")) or "_match_s_" in name


def main_step(config: ml_collections.ConfigDict, key: jax.Array | None) -> sharding.Step:
  """The paper's main sharded computation at ``config``'s shapes: generating experts for
  ``num_test_envs`` environments from their prompts and scoring their rollouts, one
  generator replica per seed, the replicas split over ``data``. With a key: networks
  initialised from it and valid inputs; with None: abstract."""
  programs = prog.Programs(config, sharding.make_mesh())
  nets = programs.nets
  r, e = int(config.num_seeds), int(config.num_test_envs)
  m, t = int(config.eval_trajs), int(config.eval_steps) + 1
  nodes0 = tuple(jnp.zeros((1,) + s) for s in nets.shapes)

  def init(k):
    k1, k2 = jax.random.split(k)
    gen = nets.init_gen(k1)
    vae = nets.vae.init(k2, nodes0, k2, 1.0)
    return gen, vae

  shapes = dict(cond=(r, e, nets.cond_dim), x0=(e, m, 2), true=(e, m, t, 2))
  if key is None:
    gen, vae = jax.eval_shape(init, jax.random.key(0))
    gen, vae = (jax.tree.map(lambda a: jax.ShapeDtypeStruct((r,) + a.shape, a.dtype), x)
                for x in (gen, vae))
    keys = jax.eval_shape(lambda: jax.random.split(jax.random.key(0), r))
    args = (keys, gen, vae, jax.ShapeDtypeStruct((r,), jnp.float32),
            jax.ShapeDtypeStruct((r, 2), jnp.float32),
            jax.ShapeDtypeStruct(shapes["cond"], jnp.float32),
            dd.WeightNormalizer(jax.ShapeDtypeStruct((nets.graph_size,), jnp.float32),
                                jax.ShapeDtypeStruct((nets.graph_size,), jnp.float32)),
            jax.ShapeDtypeStruct(shapes["x0"], jnp.float32),
            jax.ShapeDtypeStruct(shapes["true"], jnp.float32))
  else:
    ks = jax.random.split(key, 6)
    gen, vae = jax.jit(jax.vmap(init))(jax.random.split(ks[0], r))  # one program, not one per op
    # a trained-looking generator: small random output weights instead of zeros
    gen = jax.tree.map(lambda a: a + 0.01 * jax.random.normal(ks[1], a.shape), gen)
    args = (jax.random.split(ks[2], r), jax.device_get(gen), jax.device_get(vae),
            np.ones((r,), np.float32), np.tile(np.array([0.0, 1.0], np.float32), (r, 1)),
            np.asarray(jax.random.normal(ks[3], shapes["cond"])),
            dd.WeightNormalizer(np.zeros((nets.graph_size,), np.float32),
                                np.full((nets.graph_size,), 0.1, np.float32)),
            np.asarray(jax.random.uniform(ks[4], shapes["x0"], minval=-1, maxval=1)),
            np.asarray(jax.random.uniform(ks[5], shapes["true"], minval=-1, maxval=1)))
  return sharding.Step(build=lambda mesh: prog.Programs(config, mesh).generate, args=args)
