"""CausalDPO's programs: what the experiment computes, with no claims and no result files.

The preference variants (:class:`Variant`, :func:`variants`: DPO, CausalDPO at each
invariance weight and its ablations, the beta-1 family and the K-negative extension); the
seeds' worlds (:func:`make_data`); the recommender and its evaluation (HR and NDCG at 10 and
20, the popularity slope); SFT (:func:`train_sft`), the reference model's log-probabilities
and features, the inferred, oracle and random environments (:func:`environments`); the
replica loss of every preference variant (:func:`preference_loss_fn`) and their training
in one program (:func:`train_preferences`); and the per-seed summaries the metrics are
read from (:func:`summarise`, :func:`ood_score`, :func:`relative_gain`).
:mod:`.experiment` strings them into the run.
"""

from __future__ import annotations

from typing import Any, Mapping, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import optax

from reprojax.algorithms import causal_dpo
from reprojax.data import recsys
from reprojax.experiments import train
from reprojax.models import recommender

K_EVAL = 10  # HR@10 and NDCG@10 (the validation pick reads NDCG@10)
SOURCES = ("inferred", "oracle", "random")  # where a variant's environments come from
# The paper's four metrics: metric name -> (kind, cut-off). ``hr`` and ``ndcg`` are @10.
METRICS = ("hr", "ndcg", "hr20", "ndcg20")
_METRIC_AT = {"hr": ("hr", 10), "ndcg": ("ndcg", 10), "hr20": ("hr", 20), "ndcg20": ("ndcg", 20)}


class Variant(NamedTuple):
  """One preference method: numbers only, so every variant is one vmapped program."""

  name: str
  negatives: int  # how many of the K negatives the loss uses (1: DPO's pair)
  source: str  # one of SOURCES
  backdoor: float  # 1: uniform prior over environments; 0: the batch's frequencies
  variance_weight: float
  mmd_weight: float
  beta_scale: float = 1.0  # the variant's beta over config.beta


# The paper's arms train on one negative per preference pair, as the authors' code does
# (causal_dpo.py's neg_num=1, also in causal_dpo.sh): pairwise DPO's loss.
PAPER_NEGATIVES = 1
# The variants' families: the paper's (one negative, config.beta), the same at
# config.alt_beta, and the extension on S-DPO's loss over all config.num_negatives.
FAMILIES = ("", "b_", "k_")


def variants(config) -> list[Variant]:
  """The preference variants of stage 4, in a fixed order.

  The paper's family (no prefix): DPO and CausalDPO on one negative, at ``config.beta``:
  CausalDPO at each invariance weight with its ablations (without the backdoor, oracle
  environments, random environments), CausalDPO without the penalty and with the MMD
  penalty. ``b_``: DPO and CausalDPO at each weight, one negative, at ``config.alt_beta``.
  ``k_`` (our extension): S-DPO over all ``config.num_negatives`` negatives, and CausalDPO
  on S-DPO's loss at each weight, with oracle environments, and without the penalty.
  """
  k, one = int(config.num_negatives), PAPER_NEGATIVES
  bs = float(config.alt_beta) / float(config.beta)
  out = [Variant("dpo", one, "oracle", 0.0, 0.0, 0.0),
         Variant("causal_no_invariance", one, "inferred", 1.0, 0.0, 0.0)]
  for w in config.invariance_weights:
    out += [Variant(f"causal_{w:g}", one, "inferred", 1.0, w, 0.0),
            Variant(f"causal_no_backdoor_{w:g}", one, "inferred", 0.0, w, 0.0),
            Variant(f"causal_oracle_{w:g}", one, "oracle", 1.0, w, 0.0),
            Variant(f"causal_random_{w:g}", one, "random", 1.0, w, 0.0)]
  out.append(Variant("causal_mmd", one, "inferred", 1.0, 0.0, float(config.mmd_weight)))
  out.append(Variant("b_dpo", one, "oracle", 0.0, 0.0, 0.0, bs))
  out += [Variant(f"b_causal_{w:g}", one, "inferred", 1.0, w, 0.0, bs)
          for w in config.invariance_weights]
  out += [Variant("k_sdpo", k, "oracle", 0.0, 0.0, 0.0),
          Variant("k_causal_no_invariance", k, "inferred", 1.0, 0.0, 0.0)]
  for w in config.invariance_weights:
    out += [Variant(f"k_causal_{w:g}", k, "inferred", 1.0, w, 0.0),
            Variant(f"k_causal_oracle_{w:g}", k, "oracle", 1.0, w, 0.0)]
  return out


# ---------------------------------------------------------------------------- the world

class Data(NamedTuple):
  """Every seed's sessions, host arrays with leading axis S (seeds)."""

  popularity_SxN: np.ndarray
  train: recsys.Sessions  # leaves (S, U, ...)
  val: recsys.Sessions
  test: dict[str, recsys.Sessions]  # "id" and every out-of-distribution setting


def make_data(config) -> Data:
  """The seeds' worlds and sessions, drawn by one vmapped program per split."""
  seeds = np.arange(int(config.num_seeds)) + int(config.seed)
  keys = jax.vmap(jax.random.key)(seeds)
  w = config.world
  worlds = jax.vmap(lambda k: recsys.make_world(k, num_items=w.num_items, taste_dim=w.taste_dim,
                                                num_envs=len(w.env_probs)))(keys)
  probs, train_strengths = tuple(w.env_probs), tuple(w.env_strengths)

  def split(stream, num_users, strengths):
    def one(key, world):
      return recsys.sample_sessions(
          jax.random.fold_in(key, stream), world, probs, strengths, num_users=num_users,
          history_len=w.history_len, num_negatives=config.num_negatives,
          context_accuracy=w.context_accuracy, taste_scale=w.taste_scale,
          catalogue_shift=w.catalogue_shift)
    return jax.tree.map(np.asarray, jax.vmap(one)(keys, worlds))

  test = {"id": split(3, w.num_test, train_strengths)}
  for i, (name, gamma) in enumerate(config.ood.items()):
    test[name] = split(4 + i, w.num_test, (float(gamma),) * len(probs))
  return Data(np.asarray(worlds.popularity_N), split(1, w.num_train, train_strengths),
              split(2, w.num_val, train_strengths), test)


# ------------------------------------------------------------------------- the model

def make_model(config) -> recommender.NextItemRecommender:
  return recommender.NextItemRecommender(
      num_items=config.world.num_items, num_contexts=len(config.world.env_probs),
      embed_dim=config.embed_dim, hidden_dim=config.hidden_dim)


def log_policy(model, params, history, context):
  logits, h = model.apply(params, history, context, features=True)
  return jax.nn.log_softmax(recommender.exclude(logits, history), axis=-1), h


def _gather(logp_BxN, idx):
  return jnp.take_along_axis(logp_BxN, idx.reshape(idx.shape[0], -1), axis=1).reshape(idx.shape)


def evaluate(model, params, splits: tuple, popularity_N) -> dict[str, jax.Array]:
  """HR and NDCG at 10 and 20 per session of each split, and the popularity reliance.

  ``splits``: ``(history, context, target)`` triples. ``pop_slope``: the least-squares
  slope of the mean logit over the first split's sessions (finite items only)
  against popularity.
  """
  out = {}
  for i, (history, context, target) in enumerate(splits):
    logits = recommender.exclude(model.apply(params, history, context), history)
    for name, (kind, k) in _METRIC_AT.items():
      fn = causal_dpo.hit_rate_at_k if kind == "hr" else causal_dpo.ndcg_at_k
      out[f"{name}_{i}"] = fn(logits, target, k=k)
    if i == 0:
      finite = jnp.isfinite(logits)
      mean_N = jnp.sum(jnp.where(finite, logits, 0.0), 0) / jnp.maximum(jnp.sum(finite, 0), 1)
      s = popularity_N - jnp.mean(popularity_N)
      out["pop_slope"] = jnp.sum(s * (mean_N - jnp.mean(mean_N))) / jnp.sum(s * s)
  return out


def _eval_arrays(data: Data, names: tuple[str, ...]) -> tuple:
  arrays = []
  for name in names:
    s = data.val if name == "val" else data.test[name]
    arrays += [s.history_UxL, s.context_U, s.target_U]
  return tuple(arrays) + (data.popularity_SxN,)


def _eval_fn(model, num_splits):
  def fn(params, arrays, *extra):
    del extra
    splits = tuple(tuple(arrays[3 * i:3 * i + 3]) for i in range(num_splits))
    return evaluate(model, params, splits, arrays[-1])
  return fn


def split_names(config) -> tuple[str, ...]:
  """The evaluated splits, in order: in-distribution test, OOD tests, validation."""
  return ("id",) + tuple(config.ood.keys()) + ("val",)


# ------------------------------------------------------------------------------ SFT

def sft_loss_fn(model):
  def loss_fn(params, batch, key):
    del key
    history, context, target = batch
    logp, _ = log_policy(model, params, history, context)
    return -_gather(logp, target), {}
  return loss_fn


def train_sft(config, data: Data, mesh) -> tuple[Any, dict]:
  """SFT of every seed's recommender: (params with leading axis S, evals)."""
  model = make_model(config)
  s = int(config.num_seeds)
  seeds = [int(config.seed) + i for i in range(s)]
  tr = data.train
  names = split_names(config)
  init = lambda key: model.init(key, tr.history_UxL[0, :1], tr.context_U[0, :1])  # noqa: E731
  out = train.fit_replicas(
      mesh=mesh, init_params=init, loss_fn=sft_loss_fn(model),
      optimizer=optax.adam(config.sft_learning_rate),
      init_keys=jax.vmap(lambda i: jax.random.key(i))(np.asarray(seeds)),
      step_keys=jax.random.split(jax.random.key(config.seed + 10_000), s),
      train_arrays=(tr.history_UxL, tr.context_U, tr.target_U), batch_size=config.batch_size,
      num_steps=config.sft_steps, batch_seeds=seeds,
      eval_fn=_eval_fn(model, len(names)), eval_arrays=_eval_arrays(data, names))
  return out.params, out.evals, out.metrics["loss"]


class Reference(NamedTuple):
  """What preference training needs from the reference (SFT) model, per seed."""

  chosen_SxU: np.ndarray  # log pi_ref(target)
  rejected_SxUxK: np.ndarray  # log pi_ref(negatives)
  features_SxUxH: np.ndarray  # the user representation h of every training session


def reference(config, sft_params, data: Data) -> Reference:
  model = make_model(config)
  tr = data.train

  def one(params, history, context, target, negatives):
    logp, h = log_policy(model, params, history, context)
    return _gather(logp, target), _gather(logp, negatives), h

  out = jax.jit(jax.vmap(one))(sft_params, tr.history_UxL, tr.context_U, tr.target_U,
                               tr.negatives_UxK)
  return Reference(*(np.asarray(x) for x in out))


def environments(config, ref: Reference, data: Data) -> tuple[dict[str, np.ndarray], np.ndarray]:
  """Each source's memberships ``(S, U, E)`` and the inferred ones' ARI per seed."""
  e = len(config.world.env_probs)
  s = int(config.num_seeds)
  keys = jax.random.split(jax.random.key(config.seed + 20_000), 2 * s)

  def infer(key, feats, env):
    centers = causal_dpo.kmeans(feats, key, num_envs=e, num_iters=config.kmeans_steps)
    probs = causal_dpo.soft_assign(feats, centers, temperature=config.cluster_temperature)
    ari = causal_dpo.adjusted_rand_index(jnp.argmax(probs, 1), env, num_a=e, num_b=e)
    return probs, ari

  probs, ari = jax.jit(jax.vmap(infer))(keys[:s], ref.features_SxUxH, data.train.env_U)
  u = data.train.env_U.shape[1]
  rand = jax.vmap(lambda k: jax.random.randint(k, (u,), 0, e))(keys[s:])
  return ({"inferred": np.asarray(probs),
           "oracle": np.asarray(jax.nn.one_hot(data.train.env_U, e)),
           "random": np.asarray(jax.nn.one_hot(rand, e))}, np.asarray(ari))


# ----------------------------------------------------------------------- preferences

def preference_loss_fn(model, beta: float, bandwidth: float):
  """One replica's per-example loss for ``fit_replicas``: the batch's CausalDPO
  objective (S-DPO losses, backdoor prior, variance and MMD penalties) spread
  evenly over the batch, so its mean is the objective.

  ``replica_args``: ``negatives_mask_K``, ``source_3`` (one-hot over SOURCES),
  ``backdoor``, ``variance_weight``, ``mmd_weight``, ``beta_scale`` (the replica's beta
  is ``beta * beta_scale``). With one negative in the mask the S-DPO loss is DPO's.
  """

  def loss_fn(params, batch, key, args):
    del key
    history, context, target, negatives, ref_c, ref_r, p_inf, p_orc, p_rnd = batch
    logp, h = log_policy(model, params, history, context)
    mask = jnp.broadcast_to(args["negatives_mask_K"], negatives.shape)
    losses = causal_dpo.sdpo_loss(_gather(logp, target), _gather(logp, negatives), ref_c, ref_r,
                                  mask, beta=beta * args["beta_scale"])
    src = args["source_3"]
    probs = src[0] * p_inf + src[1] * p_orc + src[2] * p_rnd
    e = probs.shape[1]
    prior = args["backdoor"] * jnp.full((e,), 1.0 / e) + (1 - args["backdoor"]) * probs.mean(0)
    objective = (causal_dpo.backdoor_adjusted_loss(losses, probs, prior)
                 + args["variance_weight"] * causal_dpo.variance_penalty(losses, probs, prior)
                 + args["mmd_weight"] * causal_dpo.mmd_penalty(h, probs, bandwidth=bandwidth))
    b = losses.shape[0]
    return jnp.full((b,), objective), {"sdpo": losses}

  return loss_fn


def replica_args(config, vs: list[Variant]) -> dict[str, np.ndarray]:
  """Per-variant numbers, one row per variant (tile over seeds for replicas)."""
  k = int(config.num_negatives)
  return {
      "negatives_mask_K": np.asarray([[1.0] * v.negatives + [0.0] * (k - v.negatives)
                                      for v in vs], np.float32),
      "source_3": np.asarray([np.eye(3)[SOURCES.index(v.source)] for v in vs], np.float32),
      "backdoor": np.asarray([v.backdoor for v in vs], np.float32),
      "variance_weight": np.asarray([v.variance_weight for v in vs], np.float32),
      "mmd_weight": np.asarray([v.mmd_weight for v in vs], np.float32),
      "beta_scale": np.asarray([v.beta_scale for v in vs], np.float32),
  }


def _replicate(x, num_variants: int):
  """Seed-major arrays ``(S, ...)`` -> replica arrays ``(S * V, ...)`` (replica s * V + v)."""
  return np.repeat(np.asarray(x), num_variants, axis=0)


def preference_inputs(config, data: Data, ref: Reference, envs: dict, vs: list[Variant]):
  """``(train_arrays, replica_args, seeds)`` of the replicas, seed-major."""
  nv, s = len(vs), int(config.num_seeds)
  tr = data.train
  arrays = tuple(_replicate(a, nv) for a in (
      tr.history_UxL, tr.context_U, tr.target_U, tr.negatives_UxK, ref.chosen_SxU,
      ref.rejected_SxUxK, envs["inferred"], envs["oracle"], envs["random"]))
  args = {k: np.tile(v, (s,) + (1,) * (v.ndim - 1)) for k, v in replica_args(config, vs).items()}
  seeds = [int(config.seed) + i for i in range(s) for _ in range(nv)]
  return arrays, args, seeds


def train_preferences(config, data: Data, sft_params, ref: Reference, envs: dict, mesh):
  """Every variant x seed from the SFT weights: evals with leading axis S * V."""
  vs = variants(config)
  nv = len(vs)
  model = make_model(config)
  arrays, args, seeds = preference_inputs(config, data, ref, envs, vs)
  names = split_names(config)
  start = jax.tree.map(lambda x: _replicate(x, nv), sft_params)
  out = train.fit_replicas(
      mesh=mesh, init_params=lambda p: p,
      loss_fn=preference_loss_fn(model, config.beta, config.mmd_bandwidth),
      optimizer=optax.adam(config.pref_learning_rate), init_keys=start,
      step_keys=jax.random.split(jax.random.key(config.seed + 30_000), len(seeds)),
      train_arrays=arrays, batch_size=config.batch_size, num_steps=config.pref_steps,
      batch_seeds=[s + 40_000 for s in seeds], replica_args=args,
      eval_fn=_eval_fn(model, len(names)),
      eval_arrays=tuple(_replicate(a, nv) for a in _eval_arrays(data, names)))
  return vs, out


# ---------------------------------------------------------------------------- metrics

def summarise(config, evals: Mapping[str, np.ndarray], val_env_SxU: np.ndarray,
              num_variants: int) -> dict[str, np.ndarray]:
  """Per-seed scores ``(S, V)``: each split's mean HR/NDCG, the validation worst
  environment's NDCG, and the popularity slope."""
  names = split_names(config)
  s = int(config.num_seeds)
  out = {}
  for i, name in enumerate(names):
    for m in METRICS:
      out[f"{name}_{m}"] = np.asarray(evals[f"{m}_{i}"]).reshape(s, num_variants, -1).mean(-1)
  val_ndcg = np.asarray(evals[f"ndcg_{len(names) - 1}"]).reshape(s, num_variants, -1)
  e = len(config.world.env_probs)
  per_env = [np.sum(val_ndcg * (val_env_SxU[:, None] == k), -1) /
             np.maximum(np.sum(val_env_SxU == k, -1), 1)[:, None] for k in range(e)]
  out["val_worst_ndcg"] = np.min(np.stack(per_env), axis=0)
  out["pop_slope"] = np.asarray(evals["pop_slope"]).reshape(s, num_variants)
  return out


def ood_score(config, per_seed: Mapping[str, np.ndarray]) -> np.ndarray:
  """Mean over OOD settings and metrics of each (seed, variant)'s score ``(S, V)``."""
  return np.mean([per_seed[f"{o}_{m}"] for o in config.ood for m in METRICS], axis=0)


def relative_gain(config, per_seed, a: int, b: int) -> float:
  """Variant a's mean relative gain over variant b, averaged over OOD settings and
  metrics (each a ratio of seed means), as the paper averages over settings."""
  gains = [per_seed[f"{o}_{m}"][:, a].mean() / per_seed[f"{o}_{m}"][:, b].mean() - 1.0
           for o in config.ood for m in METRICS]
  return float(np.mean(gains))
