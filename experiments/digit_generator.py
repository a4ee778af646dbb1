"""The suite's conditional image generator on scikit-learn's digits, and its frozen scorer.

Shared by the papers that need a prompted image generator (``shared/STYLE.md``, "One
of each"): OCE erases concepts from it, Flash-GRPO aligns it with a reward.

* :func:`make_model` / :func:`init_params`: :class:`reprojax.models.cond_unet.CondUNet`
  (text encoder, cross-attention at every resolution) on 8x8 images, prompted with
  ``data.digits``' templates ("a photo of the digit three", "handwritten 3", ...).
* :func:`train_generator`: the velocity of the straight noise-to-data flow
  (``algorithms.flow_matching``), each image under a random template of its digit and
  the empty prompt with probability ``p_empty`` (for classifier-free guidance), through
  ``experiments.train.fit`` (checkpointed under ``<workdir>/generator``: a rerun
  restores it).
* :func:`train_classifier`: an MLP on the real digits, frozen, to score generations.

The config fields read: ``channels``, ``attn_multiplier``, ``text_width``,
``text_layers``, ``batch_size``, ``num_steps``, ``learning_rate``, ``warmup_steps``,
``p_empty``, ``checkpoint_every``, ``seed`` (generator); ``classifier_hidden``,
``classifier_steps`` (classifier).
"""

from __future__ import annotations

import functools
import os

import jax
import jax.numpy as jnp
import numpy as np
import optax

from reprojax.algorithms import flow_matching as fm
from reprojax.data import digits
from reprojax.experiments import train
from reprojax.models import cond_unet
from reprojax.models import mlp_classifier

IMAGE_SHAPE = (8, 8, 1)


def make_model(config) -> cond_unet.CondUNet:
  return cond_unet.CondUNet(vocab_size=len(digits.VOCAB), channels=tuple(config.channels),
                            text_width=config.text_width, text_layers=config.text_layers,
                            max_len=digits.MAX_LEN, attn_multiplier=config.attn_multiplier)


def make_optimizer(config) -> optax.GradientTransformation:
  if not 0 <= int(config.warmup_steps) < int(config.num_steps):
    raise ValueError(f"warmup_steps={config.warmup_steps} must be in [0, num_steps="
                     f"{config.num_steps}): the cosine decay needs steps after the warm-up")
  schedule = optax.warmup_cosine_decay_schedule(0.0, config.learning_rate, config.warmup_steps,
                                                config.num_steps)
  return optax.chain(optax.clip_by_global_norm(1.0), optax.adam(schedule))


def init_params(model, key):
  return model.init(key, jnp.zeros((1,) + IMAGE_SHAPE), jnp.zeros((1,)),
                    jnp.zeros((1, digits.MAX_LEN), jnp.int32))


def empty_tokens(n: int) -> jax.Array:
  """``n`` empty prompts ``(n, MAX_LEN)`` (the unconditional branch of guidance)."""
  return jnp.zeros((n, digits.MAX_LEN), jnp.int32).at[:, 0].set(digits.EMPTY)


def make_loss_fn(model, p_empty: float):
  """Per-example flow-matching loss with a fresh random prompt for each image."""
  table = jnp.asarray(digits.prompt_table())  # (10, T, 2, L)

  def loss_fn(params, batch, key):
    x1, y = batch
    b = x1.shape[0]
    k_t, k_f, k_e, k_fm = jax.random.split(key, 4)
    tok = table[y, jax.random.randint(k_t, (b,), 0, table.shape[1]),
                jax.random.randint(k_f, (b,), 0, 2)]
    tok = jnp.where((jax.random.uniform(k_e, (b,)) < p_empty)[:, None], empty_tokens(b), tok)

    def velocity(x, t):
      return model.apply(params, x.reshape(x1.shape), t, tok).reshape(b, -1)

    return fm.flow_matching_loss(velocity, x1.reshape(b, -1), k_fm), {}

  return loss_fn


def train_generator(config, workdir: str, mesh, train_split: digits.Digits,
                    stop_after: int | None = None):
  """The generator, trained (or restored) under ``<workdir>/generator``: ``(model, params)``.

  ``stop_after`` stops after that many steps, checkpointed (pre-emption tests).
  """
  model = make_model(config)
  state = train.fit(workdir=os.path.join(workdir, "generator"), mesh=mesh,
                    init_params=functools.partial(init_params, model),
                    loss_fn=make_loss_fn(model, config.p_empty),
                    optimizer=make_optimizer(config),
                    train_arrays=(train_split.images, train_split.labels),
                    batch_size=config.batch_size, num_steps=config.num_steps, seed=config.seed,
                    log_every=200, checkpoint_every=config.checkpoint_every,
                    stop_after=stop_after)
  return model, jax.device_get(state.params)


def train_classifier(config, train_split: digits.Digits, key):
  """The frozen scorer: ``(model, params)`` of an MLP fit to the real training digits."""
  model = mlp_classifier.MLPClassifier(hidden=tuple(config.classifier_hidden), num_classes=10)
  x = jnp.asarray(train_split.images.reshape(len(train_split.labels), -1))
  y = jnp.asarray(train_split.labels)
  params = model.init(key, x[:1])

  def loss(p):
    return jnp.mean(optax.softmax_cross_entropy_with_integer_labels(model.apply(p, x), y))

  params, losses = jax.jit(lambda p: train.fit_full_batch(
      loss, optax.adamw(3e-3, weight_decay=1e-3), p, config.classifier_steps))(params)
  if not np.all(np.isfinite(np.asarray(losses))):
    raise FloatingPointError("the digit classifier's training loss is not finite")
  return model, params
