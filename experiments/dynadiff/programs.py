"""What DynaDiff's experiment computes: its networks (:class:`Nets`: the expert, the
weight-graph VAE, the latent generator, and the conversions between an expert's weight
forms), every compiled stage of a run (:class:`Programs`: the zoo's fits, the VAE and
generator replicas, generation, and the baselines' fine-tuning and CoDA adaptation, CoDA's
objectives from :mod:`reprojax.algorithms.dynadiff`), and the host-side pieces between
them (the prompts' standardisation, the generator replicas' conditions, the nearest-expert
baselines, the zoo's fingerprint). No claims, no files: ``experiment.run`` orchestrates."""

from __future__ import annotations

import json
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import optax

from reprojax.algorithms import dynadiff as dd
from reprojax.algorithms import flow_matching as fm
from reprojax.data import dynadiff as dyn_data
from reprojax.experiments import sharding
from reprojax.experiments import train
from reprojax.experiments.dynadiff.claims import BASELINES
from reprojax.experiments.dynadiff.claims import REGIONS
from reprojax.models import dynadiff as dd_models
from reprojax.models import flow_mlp
from reprojax.models import fno

__all__ = ("ABLATIONS", "BASELINES", "CONDITIONS", "GENERATORS", "GEN_METHODS", "GEN_VARIANTS",
           "METHODS", "Nets", "Programs", "Prompts", "REGIONS", "VAE_VARIANTS")

GENERATORS = ("mlp", "dit")  # the suite's flow MLP over flattened latents, or a DiT over nodes
VAE_VARIANTS = ("full", "no_functional", "no_attention")
CONDITIONS = ("prompt", "params", "raw")  # what a generator replica is conditioned on
# Generator replicas: (name, the VAE variant whose latents it models, its condition: the
# prompter's features of an observed sequence, the true parameters (an oracle), or the raw
# observed sequence through the generator's own condition layers (without the prompter)).
GEN_VARIANTS = (("full", 0, "prompt"), ("no_functional", 1, "prompt"),
                ("no_attention", 2, "prompt"), ("true_params", 0, "params"),
                ("plain_encoder", 0, "raw"))
GEN_METHODS = tuple("dynadiff" if name == "full" else name for name, _, _ in GEN_VARIANTS)
ABLATIONS = GEN_METHODS[1:]  # every replica but the full one
METHODS = ("dynadiff", "shuffled", "no_functional", "no_attention", "true_params",
           "plain_encoder", "nearest_features") + BASELINES


class Nets:
  """The config's networks and the conversions between an expert's weight forms."""

  def __init__(self, config, family: str = "oscillator"):
    self.pde = family in dyn_data.PDE_FAMILIES
    self.dim = dyn_data.state_dim(family)
    if self.pde:  # u_{t+1} = u_t + FNO(u_t) on the family's grid
      self.expert = fno.FNO(modes=(int(config.fno_modes),), width=int(config.fno_width),
                            depth=int(config.fno_depth), projection=int(config.fno_projection))
      abstract = jax.eval_shape(lambda: self.expert.init(jax.random.key(0),
                                                         jnp.zeros((1, self.dim, 1))))
      self.template = [{k: tuple(a.shape) for k, a in layer.items()}  # dd.layer_shapes'
                       for layer in dd_models.fno_layers(abstract)]
      self.shapes = tuple((l["bias"][0], sum(int(np.prod(a[:-1])) for a in l.values()))
                          for l in self.template)
      self.prompt_dim = 2 * int(config.prompt_modes)
    else:
      self.expert = dd_models.ExpertMLP(hidden=tuple(config.expert_hidden), dim=2)
      self.shapes = self.expert.node_shapes()
      self.prompt_dim = 2
    self.num_nodes = sum(o for o, _ in self.shapes)
    self.graph_size = sum(o * f for o, f in self.shapes)
    self.vae = dd_models.WeightGraphVAE(self.shapes, width=int(config.vae_width),
                                        latent_dim=int(config.vae_latent),
                                        num_heads=int(config.vae_heads),
                                        num_layers=int(config.vae_layers))
    self.latent = int(config.vae_latent)
    # The generator's condition: the prompter's features, the true parameters or the raw
    # observed sequence (GEN_VARIANTS), each zero-padded to the longest, so that every
    # replica has one architecture (one vmapped program).
    self.feature_dim = dd.num_features(int(config.num_freqs), self.prompt_dim)
    self.raw_dim = (int(config.obs_steps) + 1) * self.prompt_dim
    self.cond_dim = max(self.feature_dim, self.raw_dim)
    self.num_freqs = int(config.num_freqs)
    self.prompt_modes = int(config.prompt_modes) if self.pde else 0
    if config.generator not in GENERATORS:
      raise ValueError(f"config.generator must be one of {GENERATORS}, got {config.generator!r}")
    self.generator = config.generator
    if config.generator == "dit":
      self.gen = dd_models.LatentDenoiser(self.num_nodes, self.latent,
                                          width=int(config.gen_width),
                                          num_heads=int(config.gen_heads),
                                          num_layers=int(config.gen_layers))
    else:
      self.gen = flow_mlp.CondFlowMLP(num_classes=0, hidden=(int(config.gen_width),) *
                                      int(config.gen_layers), cond_dim=self.cond_dim)

  def init_gen(self, key):
    x = jnp.zeros((1, self.num_nodes * self.latent))
    t, cond = jnp.zeros((1,)), jnp.zeros((1, self.cond_dim))
    if self.generator == "dit":
      return self.gen.init(key, x.reshape(1, self.num_nodes, self.latent), t, cond)
    return self.gen.init(key, x, t, jnp.zeros((1,), jnp.int32), cond)

  def denoiser(self, params, cond_BxC):
    """The generator's prediction of the clean latents ``x1_hat(x_BxD, t_B)`` (flattened),
    given the prompt."""

    def f(x_BxD, t_B):
      if self.generator == "dit":
        z = x_BxD.reshape(x_BxD.shape[0], self.num_nodes, self.latent)
        return self.gen.apply(params, z, t_B, cond_BxC).reshape(x_BxD.shape)
      return self.gen.apply(params, x_BxD, t_B, jnp.zeros(x_BxD.shape[:1], jnp.int32), cond_BxC)

    return f

  def velocity(self, params, cond_BxC):
    """The sampler's velocity ``(x1_hat - x_t) / (1 - t)``."""
    f = self.denoiser(params, cond_BxC)
    return lambda x, t: fm.velocity_from_x1(f(x, t), x, t)

  def init_expert(self, key):
    return self.expert.init(key, jnp.zeros((1, self.dim, 1) if self.pde else (1, 2)))

  def apply_expert(self, params, x_BxD):
    """The expert's one-step map on states ``(B, D)``."""
    if self.pde:
      return x_BxD + self.expert.apply(params, x_BxD[..., None])
    return self.expert.apply(params, x_BxD)

  def graph_of(self, params) -> jax.Array:
    """Expert parameters (leading axes allowed) -> flat weight graph ``(..., G)``."""
    layers = dd_models.fno_layers(params) if self.pde else dd_models.expert_layers(params)
    return dd.flatten_graph(dd.weight_graph(layers))

  def params_of(self, flat_xG) -> dict:
    """Flat weight graph -> expert parameters (leading axes kept)."""
    nodes = dd.unflatten_graph(flat_xG, self.shapes)
    if self.pde:
      return dd_models.fno_params(dd.graph_weights(nodes, self.template))
    return dd_models.expert_params(dd.graph_weights(nodes))

  def step_with(self, flat_G):
    """The one-step map of the expert whose flat weight graph is ``flat_G``."""
    params = self.params_of(flat_G)
    return lambda x: self.apply_expert(params, x)

  def prompt(self, obs_TxD):
    """What the prompter reads of an observed sequence: the states (ODE) or the field's low
    spatial Fourier modes (PDE)."""
    return dd.spatial_modes(obs_TxD, self.prompt_modes) if self.pde else obs_TxD

  def pad_cond(self, x_xK):
    """A condition ``(..., K)``, ``K <= cond_dim``, zero-padded to ``(..., cond_dim)``."""
    k = x_xK.shape[-1]
    if k > self.cond_dim:
      raise ValueError(f"a condition must have at most cond_dim={self.cond_dim} entries, "
                       f"got {k}")
    return jnp.pad(x_xK, [(0, 0)] * (x_xK.ndim - 1) + [(0, self.cond_dim - k)])

  def features(self, obs_xTxD):
    """The prompter's features of observed sequences ``(..., T, D) -> (..., cond_dim)``
    (padded)."""
    return self.pad_cond(dd.dynamics_features(self.prompt(obs_xTxD), self.num_freqs))

  def raw(self, obs_xTxD):
    """The plain encoder's input, the observed sequence itself as the prompter reads it,
    flattened: ``(..., T, D) -> (..., cond_dim)`` (padded; ``T * prompt_dim`` entries)."""
    p = self.prompt(obs_xTxD)
    if p.shape[-2] * p.shape[-1] != self.raw_dim:
      raise ValueError(f"obs_xTxD must hold obs_steps + 1 = {self.raw_dim // self.prompt_dim} "
                       f"states, got {obs_xTxD.shape[-2]}")
    return self.pad_cond(p.reshape(p.shape[:-2] + (-1,)))


def pairs(trajs_MxTxD):
  d = trajs_MxTxD.shape[-1]
  return (trajs_MxTxD[..., :-1, :].reshape(-1, d), trajs_MxTxD[..., 1:, :].reshape(-1, d))


def fit_expert(nets, params, x_NxD, y_NxD, scale, key, num_steps, lr, batch):
  """Adam on the one-step squared error (relative to ``scale``, the mean squared one-step
  change), minibatches of ``batch`` pairs drawn from ``key`` (``batch=None``: full batch)."""

  def loss(p, k):
    if batch is None:
      x, y = x_NxD, y_NxD
    else:
      idx = jax.random.randint(k, (batch,), 0, x_NxD.shape[0])
      x, y = x_NxD[idx], y_NxD[idx]
    return jnp.mean(jnp.sum((nets.apply_expert(p, x) - y) ** 2, -1)) / scale

  return train.fit_full_batch(loss, optax.adam(lr), params, keys=jax.random.split(key, num_steps))


def rollout_errors(nets, flat_G, x0_MxD, true_MxTxD):
  """Mean normalised rollout error of the expert ``flat_G`` over M trajectories."""
  pred = dd.rollout(nets.step_with(flat_G), x0_MxD, true_MxTxD.shape[1] - 1)  # (T, M, D)
  return jnp.mean(dd.rollout_error(pred, jnp.swapaxes(true_MxTxD, 0, 1)))


class Programs:
  """Every compiled stage of a run, built once per config and mesh: both families (same
  shapes) reuse them."""

  def __init__(self, config, mesh, family: str = "oscillator"):
    self.config, self.mesh = config, mesh
    self.nets = nets = Nets(config, family)
    c = config

    def base_fit(key, x, y, scale):
      return fit_expert(nets, nets.init_expert(key), x, y, scale, key, int(c.base_steps),
                         float(c.base_lr), 256)

    self.base_fit = jax.jit(base_fit)

    def expert_fit(key, x, y, base_flat, scale):
      params, losses = fit_expert(nets, nets.params_of(base_flat), x, y, scale, key,
                                   int(c.expert_steps), float(c.expert_lr),
                                   int(c.expert_batch))
      return nets.graph_of(params), losses[-1]

    self.expert_fit = sharding.vmap_sharded(expert_fit, mesh, in_axes=(0, 0, 0, None, None))

    def errors(flat_G, x0, true):
      return rollout_errors(nets, flat_G, x0, true)

    # (experts E, G) x (E, M, D) x (E, M, T, D) -> (E,)
    self.errors = sharding.vmap_sharded(errors, mesh, in_axes=(0, 0, 0))
    self.features = jax.jit(nets.features)
    self.raw = jax.jit(nets.raw)
    self.vae_fit = sharding.vmap_sharded(
        self._vae_fit, mesh, in_axes=(0, 0, 0, None, None, None, None, None, None, None))
    self.gen_fit = sharding.vmap_sharded(self._gen_fit, mesh, in_axes=(0, 0, 0))
    self.generate = sharding.vmap_sharded(self._generate, mesh,
                                          in_axes=(0, 0, 0, 0, 0, 0, None, None, None))
    self.finetune = sharding.vmap_sharded(self._finetune, mesh,
                                          in_axes=(0, 0, 0, None, None, 0, 0))
    self.finetune_curve = sharding.vmap_sharded(self._finetune_curve, mesh,
                                                in_axes=(0, 0, 0, None, None, 0, 0))
    self.apply_flat = lambda flat_G, x_BxD: nets.step_with(flat_G)(x_BxD)  # CoDA's apply_fn
    self.coda_fit = sharding.vmap_sharded(self._coda_fit, mesh,
                                          in_axes=(0, None, None, None, None))
    self.coda_adapt = sharding.vmap_sharded(self._coda_adapt, mesh,
                                            in_axes=(0, 0, 0, 0, 0, None, 0, 0))

  # ------------------------------------------------------------------ the VAE

  def _vae_fit(self, key, func_weight, attn_gate, zoo_norm_NxG, norm, func_x_NxSxD,
               func_y_NxSxD, scale, own_x0_NxMxD, own_true_NxMxTxD):
    """One VAE replica: its parameters, the zoo's latent means ``(N, nodes, L)``, its last
    loss, the decodings' standardised MSE and their rollout errors ``(N,)`` on the zoo's own
    fresh trajectories (the decoded zoo, beside the experts' own error)."""
    nets, c = self.nets, self.config
    k_init, k_train = jax.random.split(key)
    nodes0 = dd.unflatten_graph(zoo_norm_NxG[:1], nets.shapes)
    params = nets.vae.init(k_init, nodes0, k_init, attn_gate)

    def loss(p, k):
      k_idx, k_z = jax.random.split(k)
      idx = jax.random.randint(k_idx, (int(c.vae_batch),), 0, zoo_norm_NxG.shape[0])
      target = zoo_norm_NxG[idx]
      recon_nodes, mu, logvar = nets.vae.apply(p, dd.unflatten_graph(target, nets.shapes),
                                               k_z, attn_gate)
      recon = dd.flatten_graph(recon_nodes)
      flat = dd.denormalize(norm, recon)
      pred = jax.vmap(lambda g, x: nets.step_with(g)(x))(flat, func_x_NxSxD[idx])
      per = jax.vmap(lambda r, t, m, lv, fp, ft: dd.vae_loss(
          r, t, m, lv, fp / jnp.sqrt(scale), ft / jnp.sqrt(scale), float(c.kl_weight),
          func_weight)[0])(recon, target, mu, logvar, pred, func_y_NxSxD[idx])
      return jnp.mean(per)

    params, losses = train.fit_full_batch(loss, optax.adam(float(c.vae_lr)), params,
                                          keys=jax.random.split(k_train, int(c.vae_steps)))
    mu, _ = nets.vae.apply(params, dd.unflatten_graph(zoo_norm_NxG, nets.shapes), attn_gate,
                           method=nets.vae.encode)
    recon = dd.flatten_graph(nets.vae.apply(params, mu, attn_gate, method=nets.vae.decode))
    decoded_err = jax.vmap(lambda g, x0, t: rollout_errors(nets, g, x0, t))(
        dd.denormalize(norm, recon), own_x0_NxMxD, own_true_NxMxTxD)
    return params, mu, losses[-1], jnp.mean((recon - zoo_norm_NxG) ** 2), decoded_err

  # ------------------------------------------------------------------ the generator

  def _gen_fit(self, key, latents_NxKxL, cond_NxOxC):
    """One generator replica: flow matching on the (standardised) latents, each expert's
    condition drawn from its environment's ``O`` observed sequences, ``cond_NxOxC`` (the
    replica's :func:`variant_conditions`: prompt features, true parameters or the raw
    sequences)."""
    nets, c = self.nets, self.config
    n = latents_NxKxL.shape[0]
    lat_mean, lat_std = jnp.mean(latents_NxKxL), jnp.std(latents_NxKxL) + 1e-6
    x1_all = ((latents_NxKxL - lat_mean) / lat_std).reshape(n, -1)
    k_init, k_train = jax.random.split(key)
    params = nets.init_gen(k_init)

    def loss(p, k):
      k_idx, k_obs, k_fm = jax.random.split(k, 3)
      idx = jax.random.randint(k_idx, (int(c.gen_batch),), 0, n)
      obs = jax.random.randint(k_obs, (int(c.gen_batch),), 0, cond_NxOxC.shape[1])
      cond = cond_NxOxC[idx, obs]
      return jnp.mean(fm.x1_prediction_loss(nets.denoiser(p, cond), x1_all[idx], k_fm))

    params, losses = train.fit_full_batch(loss, optax.adam(float(c.gen_lr)), params,
                                          keys=jax.random.split(k_train, int(c.gen_steps)))
    return params, jnp.stack([lat_mean, lat_std]), losses[-1]

  def _generate(self, key, gen_params, vae_params, attn_gate, lat_stats, cond_ExC, norm,
                x0_ExMxD, true_ExMxTxD):
    """Generated experts for E environments from their conditions, and their errors."""
    nets, c = self.nets, self.config
    e = cond_ExC.shape[0]
    noise = jax.random.normal(key, (e, nets.num_nodes * nets.latent))
    x1 = fm.euler_sample(nets.velocity(gen_params, cond_ExC), noise, int(c.sample_steps))
    z = (x1 * lat_stats[1] + lat_stats[0]).reshape(e, nets.num_nodes, nets.latent)
    flat = dd.denormalize(norm, dd.flatten_graph(
        nets.vae.apply(vae_params, z, attn_gate, method=nets.vae.decode)))
    errs = jax.vmap(lambda g, x0, t: rollout_errors(nets, g, x0, t))(flat, x0_ExMxD,
                                                                        true_ExMxTxD)
    return errs

  # ------------------------------------------------------------------ baselines

  def _finetune(self, key, obs_x, obs_y, base_flat, scale, x0_MxD, true_MxTxD):
    """The base fine-tuned on one observed sequence's pairs, and its rollout error."""
    nets, c = self.nets, self.config
    params, _ = fit_expert(nets, nets.params_of(base_flat), obs_x, obs_y, scale, key,
                            int(c.finetune_steps), float(c.finetune_lr), None)
    return rollout_errors(nets, nets.graph_of(params), x0_MxD, true_MxTxD)

  def _finetune_curve(self, key, obs_x, obs_y, base_flat, scale, x0_MxD, true_MxTxD):
    """Fine-tuning's rollout error after every ``curve_every`` steps, up to
    ``curve_steps``: ``(curve_steps // curve_every,)``. Full-batch Adam from the base at
    ``finetune_lr`` on the observed pairs, as :meth:`_finetune`."""
    nets, c = self.nets, self.config
    del key
    opt = optax.adam(float(c.finetune_lr))
    every, segments = int(c.curve_every), int(c.curve_steps) // int(c.curve_every)

    def loss(p):
      return jnp.mean(jnp.sum((nets.apply_expert(p, obs_x) - obs_y) ** 2, -1)) / scale

    def step(carry, _):
      p, o = carry
      g = jax.grad(loss)(p)
      u, o = opt.update(g, o, p)
      return (optax.apply_updates(p, u), o), None

    def segment(carry, _):
      carry, _ = jax.lax.scan(step, carry, None, length=every)
      return carry, rollout_errors(nets, nets.graph_of(carry[0]), x0_MxD, true_MxTxD)

    p0 = nets.params_of(base_flat)
    _, errs = jax.lax.scan(segment, (p0, opt.init(p0)), None, length=segments)
    return errs

  def _coda_fit(self, key, base_flat, zoo_x_NxPxD, zoo_y_NxPxD, scale):
    """CoDA meta-training (:func:`reprojax.algorithms.dynadiff.coda_loss`): ``theta_0``
    (from the base), the basis ``W`` and one context per zoo environment, on random pairs
    of random environments."""
    c = self.config
    n = zoo_x_NxPxD.shape[0]
    g = base_flat.shape[0]
    k_w, k_train = jax.random.split(key)
    params = {"theta0": base_flat,
              "basis": 1e-2 * jax.random.normal(k_w, (g, int(c.context_dim))),
              "xi": jnp.zeros((n, int(c.context_dim)))}

    def loss(p, k):
      k_e, k_p = jax.random.split(k)
      b = int(c.coda_batch)
      env = jax.random.randint(k_e, (b,), 0, n)
      pair = jax.random.randint(k_p, (b,), 0, zoo_x_NxPxD.shape[1])
      return dd.coda_loss(self.apply_flat, p["theta0"], p["basis"], p["xi"], env,
                          zoo_x_NxPxD[env, pair], zoo_y_NxPxD[env, pair], scale, 1e-3)

    params, losses = train.fit_full_batch(loss, optax.adam(float(c.coda_lr)), params,
                                          keys=jax.random.split(k_train, int(c.coda_steps)))
    return params["theta0"], params["basis"], losses[-1]

  def _coda_adapt(self, key, theta0, basis, obs_x, obs_y, scale, x0_MxD, true_MxTxD):
    """A new environment's context fitted on its observed pairs
    (:func:`reprojax.algorithms.dynadiff.coda_adapt`); the adapted error."""
    nets, c = self.nets, self.config
    del key
    xi, _ = dd.coda_adapt(self.apply_flat, theta0, basis, obs_x, obs_y, int(c.adapt_steps),
                          float(c.adapt_lr), scale)
    return rollout_errors(nets, dd.context_params(theta0, basis, xi), x0_MxD, true_MxTxD)


def seed_keys(key, n):
  """One key per seed replica."""
  return jax.random.split(key, n)


@jax.jit
def take(tree, idx):
  """The replicas ``idx`` of every leaf of ``tree`` (leading axis): one compiled gather for
  the whole tree, where eager indexing compiles one program per leaf shape."""
  return jax.tree.map(lambda a: jnp.take(a, idx, axis=0), tree)


def standardise(x, mean, std):
  return (x - mean) / std


def variant_conditions(prompt_xC, params_xC, raw_xC) -> np.ndarray:
  """Every generator replica's condition, ``(len(GEN_VARIANTS), ..., C)``: for each of
  :data:`GEN_VARIANTS`, the source its third field names, the prompter's features
  (``prompt``), the true parameters (``params``) or the raw observed sequence (``raw``), all
  standardised and padded to the same ``C``; the three broadcast against each other (the
  parameters, one row per environment, against several sequences of it). The plain
  encoder's rows are ``raw_xC`` alone: it never sees the prompter's features."""
  sources = {"prompt": np.asarray(prompt_xC), "params": np.asarray(params_xC),
             "raw": np.asarray(raw_xC)}
  widths = {k: v.shape[-1:] for k, v in sources.items()}
  if len(set(widths.values())) != 1:
    raise ValueError(f"prompt_xC, params_xC and raw_xC must end in the same condition width, "
                     f"got {widths}")
  try:
    shape = np.broadcast_shapes(*(v.shape for v in sources.values()))
  except ValueError as e:
    raise ValueError(f"prompt_xC, params_xC and raw_xC must broadcast, got shapes "
                     f"{[v.shape for v in sources.values()]}") from e
  return np.stack([np.broadcast_to(sources[cond], shape) for _, _, cond in GEN_VARIANTS])


ZOO_FIELDS = ("seed", "expert_hidden", "num_zoo_envs", "zoo_trajs", "traj_steps", "base_steps",
              "base_lr", "expert_steps", "expert_lr", "expert_batch")


def zoo_fingerprint(config, name: str) -> str:
  """The config fields a family's zoo depends on (:data:`ZOO_FIELDS`), as sorted JSON: the
  stamp of its cache (:func:`reprojax.experiments.train.cached_pytree`)."""
  return json.dumps({"family": name, **{k: config[k] for k in ZOO_FIELDS}}, sort_keys=True,
                    default=list)



class Prompts(NamedTuple):
  """The zoo's conditions, standardised per coordinate over the zoo's observed sequences, and
  the statistics that standardise a new environment's alike (:func:`observed_conditions`,
  :func:`params_condition`)."""

  feats_NxOxC: np.ndarray  # the prompter's features of O sequences per zoo environment
  raw_NxOxC: np.ndarray  # the sequences themselves, flattened (the plain encoder's input)
  params_NxC: np.ndarray  # the true parameters, zero-padded to C
  f_mean: np.ndarray
  f_std: np.ndarray
  r_mean: np.ndarray
  r_std: np.ndarray
  p_mean: np.ndarray
  p_std: np.ndarray


def zoo_prompts(programs: Programs, obs_KxTxD, params_NxP, obs_per_env: int) -> Prompts:
  """The zoo's prompts from its ``K = N * obs_per_env`` observed sequences (environment-major)
  and its true parameters ``(N, P)``."""
  n = params_NxP.shape[0]
  feats = np.asarray(programs.features(obs_KxTxD))  # (N*O, C), padded
  f_mean, f_std = feats.mean(0), feats.std(0) + 1e-6
  zoo_feats = standardise(feats, f_mean, f_std).reshape(n, obs_per_env, -1)
  raws = np.asarray(programs.raw(obs_KxTxD))  # (N*O, C), padded
  r_mean, r_std = raws.mean(0), raws.std(0) + 1e-6
  zoo_raw = standardise(raws, r_mean, r_std).reshape(n, obs_per_env, -1)
  p_mean, p_std = params_NxP.mean(0), params_NxP.std(0) + 1e-6
  prompts = Prompts(zoo_feats, zoo_raw, None, f_mean, f_std, r_mean, r_std, p_mean, p_std)
  return prompts._replace(params_NxC=params_condition(programs.nets, prompts, params_NxP))


def params_condition(nets: Nets, prompts: Prompts, params_ExP) -> np.ndarray:
  """True parameters ``(E, P)`` standardised by the zoo's and zero-padded to ``(E, C)``."""
  pad = np.zeros((params_ExP.shape[0], nets.cond_dim), np.float32)
  pad[:, :params_ExP.shape[1]] = standardise(params_ExP, prompts.p_mean, prompts.p_std)
  return pad


def observed_conditions(programs: Programs, prompts: Prompts, obs_KxTxD
                        ) -> tuple[np.ndarray, np.ndarray]:
  """The prompter's features and the raw sequences of ``K`` observed sequences, each
  standardised by the zoo's statistics: ``(K, C)`` twice."""
  feats = standardise(np.asarray(programs.features(obs_KxTxD)), prompts.f_mean, prompts.f_std)
  raw = standardise(np.asarray(programs.raw(obs_KxTxD)), prompts.r_mean, prompts.r_std)
  return feats, raw


def functional_states(nets: Nets, x_NxPxD, zoo_flat_NxG, num_states: int, seed
                      ) -> tuple[jax.Array, jax.Array]:
  """The functional loss's states: ``num_states`` of each zoo environment's own states, drawn
  with NumPy's generator from ``seed``, and its expert's one-step predictions there."""
  pick = np.random.default_rng(seed).integers(0, x_NxPxD.shape[1],
                                              (x_NxPxD.shape[0], num_states))
  func_x = jnp.take_along_axis(x_NxPxD, jnp.asarray(pick)[..., None], axis=1)
  func_y = jax.vmap(lambda g, x: nets.step_with(g)(x))(zoo_flat_NxG, func_x)
  return func_x, func_y


def derangement(m: int, seed) -> np.ndarray:
  """A permutation of ``m`` that moves every index (``m > 1``): the shuffled-prompt control
  gives each environment another's prompt."""
  perm = np.random.default_rng(seed).permutation(m)
  while m > 1 and np.any(perm == np.arange(m)):  # a derangement: no prompt stays its own
    perm = np.roll(perm, 1)
  return perm


def nearest_errors(programs: Programs, zoo_flat_NxG, zoo_params_NxP, zoo_feats_NxC, env_ExP,
                   cond_RxExC, x0_ExMxD, true_ExMxTxD) -> tuple[np.ndarray, np.ndarray]:
  """The nearest-expert baselines' errors ``(R, E)``: the zoo expert nearest in standardised
  true parameters (an oracle, shared by the seeds) and the one nearest in each seed's prompt
  features (to the zoo's mean features per environment)."""
  r, m = cond_RxExC.shape[:2]
  p_scale = zoo_params_NxP.std(0) + 1e-6
  near = np.array([int(dd.nearest_expert(e_, zoo_params_NxP, p_scale)) for e_ in env_ExP])
  nearest = np.broadcast_to(np.asarray(programs.errors(zoo_flat_NxG[near], x0_ExMxD,
                                                       true_ExMxTxD)), (r, m))
  ones = np.ones(programs.nets.cond_dim, np.float32)
  near_f = np.array([[int(dd.nearest_expert(cond_RxExC[s_, j], zoo_feats_NxC, ones))
                      for j in range(m)] for s_ in range(r)])
  by_features = np.asarray(programs.errors(
      zoo_flat_NxG[near_f.ravel()], np.tile(x0_ExMxD, (r, 1, 1)),
      np.tile(true_ExMxTxD, (r, 1, 1, 1)))).reshape(r, m)
  return nearest, by_features


def steps_to_match(curve_S, target: float, every: int) -> float:
  """The first step count on a fine-tuning curve read every ``every`` steps whose error is at
  most ``target`` (inf if none)."""
  reached = np.nonzero(curve_S <= target)[0]
  return float((reached[0] + 1) * every) if reached.size else float("inf")


def generate_in_chunks(programs: Programs, key, first_fold: int, num_seeds: int, chunk: int,
                       gen_params, vae_params, gates_Q, lat_stats_Qx2, cond_QxNxC, norm,
                       x0_NxMxD, true_NxMxTxD) -> np.ndarray:
  """The errors ``(Q, N)`` of experts generated for ``N`` environments by ``Q = R * g``
  generator replicas (replica = seed * g + variant), ``chunk`` environments a call (the
  compiled shape of the test environments: no new program; the environments wrap around to
  fill the last chunk). The chunk at environment ``j`` samples with the keys
  ``fold_in(key, first_fold + j)``, one per seed, shared by the seed's replicas."""
  g = cond_QxNxC.shape[0] // num_seeds
  n = cond_QxNxC.shape[1]
  order = np.arange(-(-n // chunk) * chunk) % n
  out = []
  for j in range(0, order.size, chunk):
    sel = order[j:j + chunk]
    keys_j = jnp.repeat(seed_keys(jax.random.fold_in(key, first_fold + j), num_seeds), g,
                        axis=0)
    out.append(np.asarray(programs.generate(
        keys_j, gen_params, vae_params, gates_Q, lat_stats_Qx2, cond_QxNxC[:, sel], norm,
        x0_NxMxD[sel], true_NxMxTxD[sel])))
  return np.concatenate(out, axis=1)[:, :n]
