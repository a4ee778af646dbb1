"""DistSeal's computation: the images, the four networks (:class:`Nets`), the losses and
optimizers of each training, the jitted evaluation programs, the embedding timing and the
latent generator's training and sampling. :func:`build` makes a run's :class:`Programs` once
from its config (the jitted functions close over it), and ``experiment.run`` passes them to
the stages that use them. No claims and no result files here.
"""

from __future__ import annotations

import functools
import json
import os
import time
from typing import Any, Callable, Mapping, NamedTuple

import jax
import jax.numpy as jnp
import ml_collections
import numpy as np
import optax

from reprojax.algorithms import distseal
from reprojax.algorithms import flow_matching as fm
from reprojax.data import digits
from reprojax.data import photos
from reprojax.experiments import train
from reprojax.models import flow_mlp
from reprojax.models import watermark

METHODS = ("latent", "pixel")
# The edits of the evaluation, each at one strength (the middle of the training range;
# shift: one pixel down and right).
EVAL_EDITS = (("identity", None), ("noise", 0.05), ("shift", (1, 1)), ("blur", 0.8),
              ("brightness", 1.5), ("jpeg", 50.0))


# --------------------------------------------------------------------------- data, networks


def load_images(config) -> tuple[np.ndarray, np.ndarray]:
  """(training images, held-out images), ``(N, S, S, 1)`` float32 in [0, 1] with ``S =
  image_size``: ``dataset = "photos"``, grey patches of scikit-learn's two photographs
  (:mod:`reprojax.data.photos`, held-out patches from columns never trained on);
  ``"digits"``, the digits folds (training; validation and test), grey levels mapped to
  [0, 1] and resized (bilinear)."""
  size = int(config.image_size)
  if config.dataset == "photos":
    p = photos.patches(size, int(config.num_train), int(config.num_eval), seed=int(config.seed))
    return p.train, p.eval
  train_fold, val, test = digits.split(digits.load())

  def prep(imgs):
    x = (imgs + 1.0) / 2.0
    x = jax.image.resize(jnp.asarray(x), (x.shape[0], size, size, 1), "bilinear")
    return np.clip(np.asarray(x), 0.0, 1.0).astype(np.float32)

  return prep(train_fold.images), prep(np.concatenate([val.images, test.images]))


class Nets:
  """The four networks at the config's sizes (Linen modules; parameters live apart)."""

  def __init__(self, config):
    self.ae = watermark.AutoEncoder(latent_channels=int(config.latent_channels),
                                    channels=tuple(config.ae_channels))
    kw = dict(bits=int(config.bits), width=int(config.width), blocks=int(config.blocks),
              code_width=int(config.code_width))
    self.embedder = watermark.Embedder(**kw)  # the same module on latents and on pixels
    self.extractor = watermark.Extractor(bits=int(config.bits),
                                         channels=tuple(config.extractor_channels))
    self.size = int(config.image_size)
    self.latent_size = self.size // 2 ** len(config.ae_channels)
    self.latent_channels = int(config.latent_channels)

  def input_shape(self, method: str, batch: int = 1) -> tuple[int, ...]:
    if method == "latent":
      return (batch, self.latent_size, self.latent_size, self.latent_channels)
    return (batch, self.size, self.size, 1)

  def init_ae(self, key):
    return self.ae.init(key, jnp.zeros((1, self.size, self.size, 1)))

  def init_watermarker(self, method: str, key):
    k1, k2 = jax.random.split(key)
    bits = self.embedder.bits
    return {"embedder": self.embedder.init(k1, jnp.zeros(self.input_shape(method)),
                                           jnp.zeros((1, bits), jnp.int32)),
            "extractor": self.extractor.init(k2, jnp.zeros((1, self.size, self.size, 1)))}

  def encode(self, ae_params, x):
    return self.ae.apply(ae_params, x, method=self.ae.encode)

  def decode(self, ae_params, z):
    return self.ae.apply(ae_params, z, method=self.ae.decode)

  def watermark(self, method: str, ae_params, wm_params, x, z, messages, strength):
    """The watermarked images of ``method`` (pixels in [0, 1])."""
    if method == "latent":
      e = self.embedder.apply(wm_params["embedder"], z, messages)
      return self.decode(ae_params, distseal.embed(z, e, strength))
    e = self.embedder.apply(wm_params["embedder"], x, messages)
    return jnp.clip(distseal.embed(x, e, strength), 0.0, 1.0)

  def extract(self, wm_params, x):
    return self.extractor.apply(wm_params["extractor"], x)




def final_strength(config, method: str) -> float:
  return float(config.latent_strength if method == "latent" else config.pixel_strength)


def strength_at(config, method: str, t, num_steps: int):
  """The cosine-annealed strength at step ``t``: ``<method>_strength_start`` times the final
  one at ``t = 0``, the final one from ``anneal * num_steps`` on (the public code anneals
  3x for DC-AE latents, 1.5 to 0.5, and 10x for pixels, 0.2 to 0.02)."""
  s = final_strength(config, method)
  start = float(config.latent_strength_start if method == "latent"
                else config.pixel_strength_start)
  end = max(1.0, float(config.anneal) * num_steps)
  frac = jnp.minimum(jnp.asarray(t, jnp.float32) / end, 1.0)
  return s * (1.0 + (start - 1.0) * 0.5 * (1.0 + jnp.cos(jnp.pi * frac)))


# --------------------------------------------------------------------------- losses
#
# Frozen networks ride in the parameters under "frozen" (the optimizer leaves them, the
# loss stops their gradient), so a loss function is one object per run and method (made by
# :func:`build`) and every seed's training reuses one compiled step
# (``train.make_train_step`` memoises it on the loss's and the optimizer's identities).

FROZEN = "frozen"


def optimizer(lr: float) -> optax.GradientTransformation:
  """Adam at ``lr`` on every parameter but those under ``"frozen"`` (left as they are)."""
  def labels(params):
    return {k: jax.tree.map(lambda _, k=k: "frozen" if k == FROZEN else "train", v)
            for k, v in params.items()}
  return optax.multi_transform({"train": optax.adam(lr), "frozen": optax.set_to_zero()},
                               labels)


class ParamEmaState(NamedTuple):
  """:func:`param_ema`'s state."""
  count: jax.Array  # () int32, updates seen
  ema: optax.Params  # the parameters' moving average, a pytree like the parameters


def param_ema(decay: float, warmup: float) -> optax.GradientTransformation:
  """An exponential moving average of the parameters, kept in the optimizer's state.

  After update ``t`` (from 1) of parameters ``p_t = p_{t-1} + u_t``:
  ``ema_t = ema_{t-1} - (1 - d_t) (ema_{t-1} - p_t)``, ``d_t = decay (1 - exp(-t / warmup))``,
  the public code's EMA (``deps/efficientvit/apps/utils/ema.py``, stepped after each
  optimizer step; its shadow starts from a copy of the network, ours from the initial
  parameters: at ``t = 1``, ``d_1`` is about ``decay / warmup`` and the average is almost
  ``p_1`` either way). The updates pass through unchanged; chain it after the optimizer.
  Read the average from the chain's state (``opt_state[-1].ema``).

  Args:
    decay: the long-run decay in [0, 1).
    warmup: steps over which the decay rises from 0 (> 0).
  """
  if not 0.0 <= decay < 1.0:
    raise ValueError(f"decay must lie in [0, 1), got {decay}")
  if not warmup > 0.0:
    raise ValueError(f"warmup must be > 0 steps, got {warmup}")

  def init(params):
    return ParamEmaState(jnp.zeros((), jnp.int32), jax.tree.map(jnp.array, params))

  def update(updates, state, params=None):
    if params is None:
      raise ValueError("param_ema needs the parameters in update(updates, state, params)")
    t = state.count + 1
    d = decay * (1.0 - jnp.exp(-t.astype(jnp.float32) / warmup))
    new = optax.apply_updates(params, updates)
    ema = jax.tree.map(lambda e, p: e - (1.0 - d) * (e - p), state.ema, new)
    return updates, ParamEmaState(t, ema)

  return optax.GradientTransformation(init, update)


def generator_optimizer(config, adam: optax.GradientTransformation | None = None
                        ) -> optax.GradientTransformation:
  """The generator fine-tuning's optimizer: recipe ``"adam"``, :func:`optimizer` at
  ``gen_learning_rate``; ``"authors"`` (the public code's
  ``configs/training/diffusion/inmodel_transformer.yaml``), AdamW at
  ``gen_finetune_learning_rate`` with ``gen_betas`` and ``gen_weight_decay`` (decoupled, as
  torch's), constant rate, then :func:`param_ema` (``gen_ema_decay``, ``gen_ema_warmup``).
  ``adam``: the base generator's optimizer, returned itself for recipe ``"adam"`` (one
  compiled step for both trainings)."""
  if config.gen_recipe == "adam":
    return adam if adam is not None else optimizer(float(config.gen_learning_rate))
  b1, b2 = (float(b) for b in config.gen_betas)
  return optax.chain(optax.adamw(float(config.gen_finetune_learning_rate), b1=b1, b2=b2,
                                 weight_decay=float(config.gen_weight_decay)),
                     param_ema(float(config.gen_ema_decay), float(config.gen_ema_warmup)))


def ae_loss_fn(nets: Nets):
  """The autoencoder's pixel MSE: ``(params, (x,), key) -> (MSE (B,), {})``."""

  def loss(params, batch, key):
    del key
    (x,) = batch
    return jnp.mean((nets.ae.apply(params, x) - x) ** 2, axis=(1, 2, 3)), {}
  return loss


def watermark_loss_fn(config, nets: Nets, method: str):
  """Post-hoc training of ``method``: ``(params, (x, z), key, t) -> (BCE (B,), aux)``, the
  parameters ``{"embedder", "extractor", "frozen": {"ae"}}``."""
  steps, bits = int(config.wm_steps), int(config.bits)
  edit_from = int(float(config.edit_start) * steps)

  def loss(params, batch, key, t):
    x, z = batch
    ae_params = jax.lax.stop_gradient(params[FROZEN]["ae"])
    k_msg, k_aug = jax.random.split(key)
    m = distseal.random_messages(k_msg, x.shape[0], bits)
    s = strength_at(config, method, t, steps)
    x_w = nets.watermark(method, ae_params, params, x, z, m, s)
    edited = jnp.where(t >= edit_from, distseal.augment(k_aug, x_w), x_w)
    logits = nets.extract(params, edited)
    return distseal.watermark_loss(logits, m), {"bit_acc": distseal.bit_accuracy(logits, m)}

  return loss


def teacher_images(config, nets: Nets, method: str, ae_params, wm_params, z, message):
  """The teacher's watermarked decode of ``z`` for the fixed message (what distillation
  imitates): ``D(z + s E(z, m*))``, or ``clip(D(z) + s_pix E_pix(D(z), m*))``."""
  m = jnp.broadcast_to(message, (z.shape[0], message.shape[-1]))
  x = nets.decode(ae_params, z)
  return nets.watermark(method, ae_params, wm_params, x, z, m, final_strength(config, method))


def teacher_program(config, nets: Nets, method: str):
  """:func:`teacher_images` of ``method``, jitted: ``(ae_params, wm_params, z, message)``."""
  return jax.jit(functools.partial(teacher_images, config, nets, method))


def distill_loss_fn(config, nets: Nets):
  """Decoder distillation: ``(params, (z, target, m*), key) -> (L1 + w BCE (B,), aux)``, the
  parameters ``{"ae", "frozen": {"watermarker": {"extractor"}}}`` (the teacher's extractor
  alone, so the latent and pixel distillations share one program); only the decoder enters
  the loss (the encoder's gradient is zero, Adam leaves it)."""
  w = float(config.bit_weight)

  def loss(params, batch, key):
    del key
    z, target, m = batch
    out = nets.decode(params["ae"], z)
    logits = nets.extract(jax.lax.stop_gradient(params[FROZEN]["watermarker"]), out)
    return (distseal.decoder_distill_loss(out, target, logits, m, bit_weight=w),
            {"bit_acc": distseal.bit_accuracy(logits, m)})

  return loss


# --------------------------------------------------------------------------- training


def fit(config, mesh, workdir, init, loss, opt, arrays, steps, seed, with_step=False):
  """``train.fit`` of ``loss`` by ``opt`` for ``steps`` at the config's batch size,
  checkpointed at the end under ``workdir``; the trained parameters on the host."""
  state = train.fit(workdir=workdir, mesh=mesh, init_params=init, loss_fn=loss,
                    optimizer=opt, train_arrays=arrays,
                    batch_size=int(config.batch_size), num_steps=steps, seed=seed,
                    log_every=max(1, steps // 10), checkpoint_every=steps, keep_checkpoints=1,
                    with_step=with_step)
  return jax.device_get(state.params)


# --------------------------------------------------------------------------- evaluation


def _read_after_edits(nets, wm_params, images, messages, key, fpr):
  """Mean bit accuracy and flag rate (TPR) of ``messages`` read from ``images`` after each
  edit of :data:`EVAL_EDITS`: ``{"acc_<edit>": (), "tpr_<edit>": ()}``."""
  edited = jnp.concatenate([distseal.apply_edit(jax.random.fold_in(key, i), images, edit, s)
                            for i, (edit, s) in enumerate(EVAL_EDITS)])
  # one extractor over every edit's images (one copy of it in the compiled program)
  logits = nets.extract(wm_params, edited).reshape(len(EVAL_EDITS), *messages.shape)
  out = {}
  for i, (edit, _) in enumerate(EVAL_EDITS):
    out[f"acc_{edit}"] = jnp.mean(distseal.bit_accuracy(logits[i], messages))
    out[f"tpr_{edit}"] = jnp.mean(distseal.detect(logits[i], messages, fpr)[1])
  return out


def eval_program(config, nets: Nets, method: str):
  """``(ae_params, wm_params, x, z, key) -> per strength multiplier: PSNR, SSIM, per edit
  bit accuracy and flag rate`` (one jitted function of the held-out set)."""
  grid = jnp.asarray(tuple(config.strength_grid), jnp.float32)
  fpr = float(config.fpr)

  def at(ae_params, wm_params, x, z, m, ref, mult, key):
    x_w = nets.watermark(method, ae_params, wm_params, x, z, m, mult * final_strength(config, method))
    out = {"psnr": jnp.mean(distseal.psnr(x_w, ref)), "ssim": jnp.mean(distseal.ssim(x_w, ref))}
    return {**out, **_read_after_edits(nets, wm_params, x_w, m, key, fpr)}

  def program(ae_params, wm_params, x, z, key):
    m = distseal.random_messages(jax.random.fold_in(key, 99), x.shape[0], int(config.bits))
    ref = nets.decode(ae_params, z) if method == "latent" else x
    return jax.vmap(at, in_axes=(None, None, None, None, None, None, 0, None))(
        ae_params, wm_params, x, z, m, ref, grid, key)

  return jax.jit(program)


def distilled_program(config, nets: Nets):
  """``(ae_params, student_params, extractor, target, z, message, key)``: the distilled
  decoder's images against the plain decode (PSNR, SSIM) and the teacher's (PSNR); bit
  accuracy and flag rate after each edit; the plain decode's bit accuracy and flag rate
  against the same message (no watermark: the false positives)."""
  fpr = float(config.fpr)

  def program(ae_params, student, wm_params, target, z, message, key):
    plain = nets.decode(ae_params, z)
    out_img = nets.decode(student, z)
    m = jnp.broadcast_to(message, (z.shape[0], message.shape[-1]))
    res = {"psnr": jnp.mean(distseal.psnr(out_img, plain)),
           "ssim": jnp.mean(distseal.ssim(out_img, plain)),
           "psnr_teacher": jnp.mean(distseal.psnr(out_img, target))}
    res.update(_read_after_edits(nets, wm_params, out_img, m, key, fpr))
    logits = nets.extract(wm_params, plain)
    res["clean_acc"] = jnp.mean(distseal.bit_accuracy(logits, m))
    res["clean_flagged"] = jnp.mean(distseal.detect(logits, m, fpr)[1])
    return res

  return jax.jit(program)


def matched_accuracy(psnr_G: np.ndarray, acc_G: np.ndarray, target_psnr: float
                     ) -> tuple[float, bool]:
  """The accuracy at ``target_psnr`` by linear interpolation along a strength grid (PSNR
  falls as the strength grows), and whether the target lay inside the grid's PSNR range
  (outside, the nearest end's accuracy is returned)."""
  order = np.argsort(psnr_G)
  p, a = np.asarray(psnr_G)[order], np.asarray(acc_G)[order]
  inside = bool(p[0] <= target_psnr <= p[-1])
  return float(np.interp(target_psnr, p, a)), inside


# --------------------------------------------------------------------------- embedding time


def embedder_flops(config, method: str) -> int:
  """Analytic FLOPs of one embedding ``E(v, m)`` (per image; a multiply-add is 2): the
  convolutions at ``v``'s spatial size (:class:`reprojax.models.watermark.Embedder`: the
  input block with its 1x1 skip, ``blocks`` residual blocks on ``width + code_width``
  channels in, the 1x1 output convolution), counting the taps that fall inside the image
  (a ``k x k`` same-padded convolution over ``n`` positions has ``n k - r (r + 1)`` valid
  taps per axis, ``r = k // 2``, as XLA counts them); activations and the message table
  omitted."""
  nets = Nets(config)
  _, h, w, c = nets.input_shape(method)
  width, code = int(config.width), int(config.code_width)

  def conv(k, cin, cout):
    r = k // 2
    return 2 * (h * k - r * (r + 1)) * (w * k - r * (r + 1)) * cin * cout

  def res(cin):
    return conv(3, cin, width) + conv(3, width, width) + (conv(1, cin, width) if cin != width
                                                          else 0)

  total = res(c) + res(width + code) + sum(res(width) for _ in range(int(config.blocks) - 1))
  return total + conv(1, width, c)


def embedding_calls(config, nets: Nets, params: Mapping[str, object], seed: int
                    ) -> dict[str, Callable[[], jax.Array]]:
  """Per method, a call of one jitted embedding of ``timing_batch`` random inputs and messages
  (``v + s E(v, m)``; the pixel one clipped), compiled and run once; ``params[method]`` holds
  its ``"embedder"``. Shared by :func:`embedding_timing` and ``make bench``."""
  b = int(config.timing_batch)
  rng = np.random.default_rng(seed)
  fns = {}
  for method in METHODS:
    v = jnp.asarray(rng.uniform(size=nets.input_shape(method, b)).astype(np.float32))
    m = jnp.asarray(rng.integers(0, 2, (b, int(config.bits))).astype(np.int32))
    s = final_strength(config, method)
    if method == "latent":
      f = jax.jit(lambda p, v, m, s=s: distseal.embed(v, nets.embedder.apply(p, v, m), s))
    else:
      f = jax.jit(lambda p, v, m, s=s: jnp.clip(
          distseal.embed(v, nets.embedder.apply(p, v, m), s), 0.0, 1.0))
    fns[method] = functools.partial(f, params[method]["embedder"], v, m)
    jax.block_until_ready(fns[method]())
  return fns


def embedding_timing(config, nets: Nets, params: Mapping[str, object], seed: int
                     ) -> dict[str, float]:
  """Median wall seconds of :func:`embedding_calls` per method, interleaved repeats."""
  fns = embedding_calls(config, nets, params, seed)
  times = {k: [] for k in METHODS}
  for _ in range(int(config.timing_repeats)):
    for method in METHODS:
      t0 = time.perf_counter()
      jax.block_until_ready(fns[method]())
      times[method].append(time.perf_counter() - t0)
  return {f"{k}_embed_s": float(np.median(v)) for k, v in times.items()}


# --------------------------------------------------------------------------- the generator


def generator_net(config) -> flow_mlp.CondFlowMLP:
  return flow_mlp.CondFlowMLP(num_classes=1, hidden=tuple(config.gen_hidden))


def generator_loss_fn(net: flow_mlp.CondFlowMLP):
  """Flow matching on standardised latents: ``(params, (z_BxD,), key) -> (loss (B,), {})``
  (one class: the label is always 0)."""

  def loss(params, batch, key):
    (z,) = batch
    label = jnp.zeros(z.shape[:1], jnp.int32)
    return fm.flow_matching_loss(lambda x, t: net.apply(params, x, t, label), z, key), {}

  return loss


def velocity_fn(net: flow_mlp.CondFlowMLP):
  """The flow's velocity field ``(params, x_BxD, t_B) -> v_BxD`` (the one class)."""

  def velocity(params, x, t):
    return net.apply(params, x, t, jnp.zeros(x.shape[:1], jnp.int32))

  return velocity


def nearest_distance_ratio(samples_NxD, train_MxD, heldout_KxD):
  """Memorisation: the median over samples of the Euclidean distance to the nearest training
  point, over the same median for held-out points (about 1: the samples sit as far from the
  training set as new data does; towards 0: they copy training points)."""
  def nearest(a):
    d2 = (jnp.sum(a ** 2, 1)[:, None] - 2.0 * a @ train_MxD.T
          + jnp.sum(train_MxD ** 2, 1)[None, :])
    return jnp.sqrt(jnp.maximum(jnp.min(d2, axis=1), 0.0))
  return jnp.median(nearest(samples_NxD)) / jnp.median(nearest(heldout_KxD))


def generated_program(config, nets: Nets, net: flow_mlp.CondFlowMLP):
  """``(ae_params, base, tuned, wm_params, mu, sd, message, key, train_w, eval_w)``: both
  generators sampled from the same noise, decoded by the plain ``D``; the tuned generator's
  images read after each edit (bit accuracy, TPR), the base's flag rate and bit accuracy
  against ``m*``, the PSNR between the two generators' images, the tuned samples'
  :func:`nearest_distance_ratio` to the standardised watermarked training latents
  ``train_w`` (held-out: ``eval_w``), and the teacher's bit accuracy and flag rate on
  ``eval_w`` decoded (the target's own detection, no edit)."""
  fpr = float(config.fpr)
  n, steps = int(config.gen_samples), int(config.gen_sample_steps)
  shape = nets.input_shape("latent", n)
  velocity = velocity_fn(net)

  def program(ae_params, base, tuned, wm_params, mu, sd, message, key, train_w, eval_w):
    noise = jax.random.normal(jax.random.fold_in(key, 7), (n, int(np.prod(shape[1:]))))
    latents = [fm.euler_sample(functools.partial(velocity, p), noise, steps)
               for p in (base, tuned)]
    images = [nets.decode(ae_params, (x * sd + mu).reshape(shape)) for x in latents]
    m = jnp.broadcast_to(message, (n, message.shape[-1]))
    res = {"psnr_to_base": jnp.mean(distseal.psnr(images[1], images[0])),
           "nn_ratio": nearest_distance_ratio(latents[1], train_w, eval_w)}
    res.update(_read_after_edits(nets, wm_params, images[1], m, key, fpr))
    logits = nets.extract(wm_params, images[0])
    res["base_acc"] = jnp.mean(distseal.bit_accuracy(logits, m))
    res["base_flagged"] = jnp.mean(distseal.detect(logits, m, fpr)[1])
    # the target's own detection: the held-out watermarked latents decoded and read (what a
    # generator sampling the watermarked latents' distribution exactly would reach)
    target = nets.decode(ae_params, (eval_w * sd + mu).reshape((-1,) + shape[1:]))
    m_t = jnp.broadcast_to(message, (target.shape[0], message.shape[-1]))
    logits = nets.extract(wm_params, target)
    res["teacher_acc"] = jnp.mean(distseal.bit_accuracy(logits, m_t))
    res["teacher_tpr"] = jnp.mean(distseal.detect(logits, m_t, fpr)[1])
    return res

  return jax.jit(program)


def curve_steps(config) -> tuple[int, ...]:
  """The fine-tuning steps at which the generator is evaluated: ``gen_curve_steps`` and the
  last, ``gen_finetune_steps``, ascending."""
  n = int(config.gen_finetune_steps)
  return tuple(sorted({int(k) for k in config.get("gen_curve_steps", ())} | {n}))


def finetune_generator(config, progs: Programs, mesh, workdir, base, z_w, seed, evaluate):
  """Fine-tunes the base generator on the standardised watermarked latents ``z_w`` with
  ``progs.gen_finetune_optimizer`` (:func:`generator_optimizer`), pausing at each of :func:`curve_steps` to call
  ``evaluate(params) -> {name: float}`` on the generator sampled there (recipe
  ``"authors"``: the EMA of the weights; its last weights as ``raw_<name>``). One
  ``train.fit`` run, checkpointed at each pause, so the curve's last point is the run of
  ``gen_finetune_steps`` with no pause; each point's values are kept in
  ``<workdir>/curve.json``, so a rerun restores them (the folder keeps one checkpoint, the
  last). Returns ``{step: values}``."""
  n = int(config.gen_finetune_steps)
  ema = config.gen_recipe == "authors"
  path = os.path.join(workdir, "curve.json")
  done: dict[str, dict[str, float]] = {}
  if os.path.isfile(path):
    with open(path) as f:
      done = json.load(f)
  out = {}
  for k in curve_steps(config):
    if str(k) in done and k != n:
      out[k] = done[str(k)]
      continue
    state = train.fit(workdir=workdir, mesh=mesh, init_params=base,
                      loss_fn=progs.gen_loss, optimizer=progs.gen_finetune_optimizer,
                      train_arrays=(z_w,), batch_size=int(config.batch_size), num_steps=n,
                      seed=seed, log_every=max(1, n // 10), checkpoint_every=n,
                      keep_checkpoints=1, stop_after=None if k == n else k)
    params = jax.device_get(state.params)
    if ema:
      vals = dict(evaluate(jax.device_get(state.opt_state[-1].ema)))
      vals.update({f"raw_{name}": v for name, v in evaluate(params).items()})
    else:
      vals = dict(evaluate(params))
    out[k] = done[str(k)] = vals
    if jax.process_index() == 0:
      with open(path, "w") as f:
        json.dump(done, f)
  return out




# --------------------------------------------------------------------------- a run's programs


class Programs(NamedTuple):
  """A run's programs, made once from its config by :func:`build`: the losses and optimizers
  are the same objects for every seed (one compiled training step each), the jitted
  evaluations close over the config (one compilation each)."""

  nets: Nets
  adam: optax.GradientTransformation  # the autoencoder's and watermarkers' (learning_rate)
  distill_adam: optax.GradientTransformation  # the decoder distillation's
  ae_loss: Callable  # (params, (x,), key) -> (loss (B,), aux)
  watermark_loss: Mapping[str, Callable]  # per method: (params, (x, z), key, t)
  distill_loss: Callable  # (params, (z, target, m*), key)
  init_watermarker: Callable  # jitted (method static, key) -> {"embedder", "extractor"}
  encode: Callable  # jitted (ae_params, x) -> z
  decode: Callable  # jitted (ae_params, z) -> x
  teacher: Mapping[str, Callable]  # per method, jitted :func:`teacher_images`
  evaluate: Mapping[str, Callable]  # per method, jitted :func:`eval_program`
  distilled: Callable  # jitted :func:`distilled_program`
  # the latent generator's (None when gen_steps = 0)
  gen_net: flow_mlp.CondFlowMLP | None = None
  gen_loss: Callable | None = None  # flow matching, (params, (z_BxD,), key)
  gen_adam: optax.GradientTransformation | None = None  # the base generator's
  gen_finetune_optimizer: optax.GradientTransformation | None = None
  generated: Callable | None = None  # jitted :func:`generated_program`


_BUILT: dict[ml_collections.FrozenConfigDict, Programs] = {}


def build(config) -> Programs:
  """The :class:`Programs` of a run at ``config``, made once per config: a second run at the
  same config in one process (a notebook's rerun in the same folder) reuses the last one's
  compiled programs instead of compiling them again."""
  key = ml_collections.FrozenConfigDict(config)
  if key not in _BUILT:
    _BUILT.clear()
    _BUILT[key] = _build(config)
  return _BUILT[key]


def _build(config) -> Programs:
  nets = Nets(config)
  gen: dict[str, Any] = {}
  if int(config.get("gen_steps", 0)) > 0:
    net = generator_net(config)
    adam = optimizer(float(config.gen_learning_rate))
    gen = {"gen_net": net, "gen_loss": generator_loss_fn(net), "gen_adam": adam,
           "gen_finetune_optimizer": generator_optimizer(config, adam),
           "generated": generated_program(config, nets, net)}
  return Programs(
      nets=nets, adam=optimizer(float(config.learning_rate)),
      distill_adam=optimizer(float(config.distill_learning_rate)),
      ae_loss=ae_loss_fn(nets),
      watermark_loss={k: watermark_loss_fn(config, nets, k) for k in METHODS},
      distill_loss=distill_loss_fn(config, nets),
      init_watermarker=jax.jit(nets.init_watermarker, static_argnums=0),
      encode=jax.jit(nets.encode), decode=jax.jit(nets.decode),
      teacher={k: teacher_program(config, nets, k) for k in METHODS},
      evaluate={k: eval_program(config, nets, k) for k in METHODS},
      distilled=distilled_program(config, nets), **gen)
