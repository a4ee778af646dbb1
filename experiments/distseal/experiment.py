"""DistSeal at toy size: latent against pixel watermarking, and both distilled into the decoder.

The run (grey images in [0, 1] of ``image_size`` pixels: patches of scikit-learn's two
photographs, or its digits upsampled; held-out images evaluate):

1. **Autoencoder** (the generator's given latent autoencoder, shared by every seed):
   :class:`reprojax.models.watermark.AutoEncoder` fitted by pixel MSE
   (:func:`reprojax.experiments.train.fit`, checkpointed under ``<workdir>/autoencoder``).
2. Per seed (``num_seeds``; each seed's latent and pixel runs are independent jobs, run in
   threads by :func:`reprojax.experiments.common.map_seeds` on a one-device CPU run, the
   results bit for bit the serial loop's; every training a checkpointed ``train.fit`` under
   ``<workdir>/seed<s>/<run>``: a rerun restores what was trained):

   * **latent watermarker**: embedder ``E`` on latents and extractor ``X`` on pixels,
     ``x_w = D(z + s E(z, m))`` for random messages ``m``, the bit BCE of ``X(A(x_w))``
     (``A`` a random edit from step ``edit_start`` on), ``D`` frozen;
   * **pixel watermarker** (the baseline), the same networks but for the input and output
     convolutions, on pixels: ``x_w = clip(x + s_pix E_pix(x, m), 0, 1)``, the same loss;

     the strength of each is annealed by a cosine from ``<method>_strength_start`` times
     its final value over the first ``anneal`` of training (the public code anneals
     between epochs, 3x for DC-AE latents and 10x for pixels);
   * **decoder distillation** of each: a fixed message ``m*`` per seed, a copy of ``D``
     fine-tuned so ``D'(z)`` reproduces the teacher's watermarked image (latent:
     ``D(z + s E(z, m*))``; pixel: ``clip(D(z) + s_pix E_pix(D(z), m*))``) with the
     teacher's frozen extractor reading ``m*`` (``L1 + bit_weight BCE``), so decoding
     alone watermarks.

3. **Evaluation** on the held-out images: each post-hoc watermarker at strengths
   ``s * strength_grid`` (PSNR and SSIM against its reference, ``D(z)`` for latent and
   ``x`` for pixel as the public code measures, and bit accuracy after each edit of
   ``EVAL_EDITS``), read at matched PSNR (the pixel watermarker's accuracy interpolated at
   the latent one's PSNR at its own strength); the distilled decoders' bit accuracy and
   true-positive rate at ``fpr`` after each edit; the false-positive rate and bit
   accuracy of the plain decoder's images (no watermark) against ``m*``.
4. **Embedding time**: ``E`` on ``timing_batch`` latents against ``E_pix`` on as many
   images (jitted, interleaved repeats, the median), beside analytic FLOPs.

5. **Generator distillation** (when ``gen_steps > 0``: ``configs/generator.py`` and
   ``configs/medium.py``, not the quick run, which cannot hold it): a latent generator, the
   suite's flow MLP
   (:class:`reprojax.models.flow_mlp.CondFlowMLP`, one class) over the flattened latents
   (standardised per dimension), trained by flow matching
   (:mod:`reprojax.algorithms.flow_matching`) on the encoded training images; per seed a
   copy fine-tuned ``gen_finetune_steps`` on the latent teacher's watermarked latents
   ``z + s E(z, m*)``, so that sampling alone watermarks (``gen_recipe``: ``"adam"``, ours
   before issue 66; ``"authors"``, the public code's ``inmodel_transformer.yaml``: AdamW,
   the EMA of the weights sampled; :func:`programs.finetune_generator`, evaluated also at
   ``gen_curve_steps``, the detection-versus-steps curve). ``gen_samples`` samples of each
   (the same noise, ``gen_sample_steps`` Euler steps) are decoded by the plain ``D`` and
   read by the latent watermarker's extractor: the fine-tuned generator's bit accuracy and
   TPR at ``fpr`` after each edit, the base generator's flag rate (its false positives), and
   the PSNR between the two generators' images from the same noise. Only the latent
   watermarker is distilled into the generator (a pixel watermark has no latent to train
   on without re-encoding).

The quick config takes about 3.5 minutes on 2 cores (the
budget is 90 s), and its 1,000 steps leave the watermarkers short of trained (0.80-0.82 of
the bits read unedited); ``configs/medium.py`` trains three times as long (README).

What each stage computes is in :mod:`programs` (built once per run by ``programs.build``);
the claims, pure over the metrics, in :mod:`claims`; this module orchestrates (seeds,
checkpoint folders, the metrics, the figures) and gives the registry ``main_step``.
"""

from __future__ import annotations

import functools
import os

import jax
import jax.numpy as jnp
import ml_collections
import numpy as np

from reprojax.algorithms import distseal
from reprojax.experiments import common
from reprojax.experiments import sharding
from reprojax.experiments.distseal import plots
from reprojax.experiments.distseal import programs
from reprojax.experiments.distseal.programs import EVAL_EDITS, FROZEN, METHODS

_POS = (0.5, float("inf"))
CONFIG_RANGES = {"image_size": _POS, "num_train": _POS, "num_eval": _POS, "bits": _POS,
                 "ae_steps": _POS, "wm_steps": _POS, "distill_steps": _POS, "batch_size": _POS, "timing_batch": _POS,
                 "timing_repeats": _POS, "latent_strength": (0.0, float("inf")),
                 "pixel_strength": (0.0, float("inf")),
                 "latent_strength_start": (1.0, float("inf")),
                 "pixel_strength_start": (1.0, float("inf")),
                 "anneal": (0.0, 1.0), "edit_start": (0.0, 1.0), "fpr": (0.0, 1.0),
                 "bit_weight": (0.0, float("inf")), "gen_steps": (-0.5, float("inf")),
                 "gen_finetune_steps": _POS, "gen_samples": _POS, "gen_sample_steps": _POS,
                 "gen_learning_rate": (0.0, 1.0), "gen_finetune_learning_rate": (0.0, 1.0),
                 "gen_weight_decay": (-1e-12, float("inf")), "gen_ema_decay": (-1e-12, 1.0),
                 "gen_ema_warmup": (0.0, float("inf"))}
GEN_RECIPES = ("adam", "authors")


def _check_config(config) -> None:
  if config.dataset not in ("photos", "digits"):
    raise ValueError(f"config.dataset must be 'photos' or 'digits', got {config.dataset!r}")
  if int(config.image_size) % 8:
    raise ValueError(f"config.image_size must be a multiple of 8 (JPEG's blocks), got "
                     f"{config.image_size}")
  stages = len(config.ae_channels)
  if int(config.image_size) % (2 ** stages):
    raise ValueError(f"config.image_size={config.image_size} must divide by 2^{stages} "
                     "(the autoencoder's stride-2 stages)")
  if 1.0 not in tuple(float(g) for g in config.strength_grid):
    raise ValueError(f"config.strength_grid must contain 1.0, got {tuple(config.strength_grid)}")
  if config.get("gen_recipe", "adam") not in GEN_RECIPES:
    raise ValueError(f"config.gen_recipe must be one of {GEN_RECIPES}, got {config.gen_recipe!r}")
  n = int(config.get("gen_finetune_steps", 1))
  bad = [k for k in config.get("gen_curve_steps", ()) if not 0 < int(k) <= n]
  if bad:
    raise ValueError(f"config.gen_curve_steps must lie in [1, gen_finetune_steps={n}], got "
                     f"{tuple(config.gen_curve_steps)}")


def run(config: ml_collections.ConfigDict, workdir: str) -> dict[str, float]:
  """The run of the module docstring; returns the metrics."""
  _check_config(config)
  mesh = sharding.config_mesh(config)
  progs = programs.build(config)  # every compiled program of the run, made once
  nets = progs.nets
  train_x, eval_x = programs.load_images(config)
  seed0 = int(config.seed)
  fit = functools.partial(programs.fit, config, mesh)

  ae_params = fit(os.path.join(workdir, "autoencoder"), nets.init_ae, progs.ae_loss, progs.adam,
                  (train_x,), int(config.ae_steps), seed0)
  encode = progs.encode
  train_z, eval_z = np.asarray(encode(ae_params, train_x)), np.asarray(encode(ae_params, eval_x))
  plain_eval = np.asarray(progs.decode(ae_params, eval_z))
  m: dict[str, float] = {"num_seeds": float(config.num_seeds), "bits": float(config.bits),
                         "ae_psnr": float(np.mean(distseal.psnr(plain_eval, eval_x)))}
  per: dict[str, list[float]] = {}
  use_gen = int(config.get("gen_steps", 0)) > 0
  if use_gen:  # the base latent generator, on the standardised training latents
    flat = train_z.reshape(train_z.shape[0], -1)
    mu, sd = flat.mean(0), flat.std(0) + 1e-6
    net = progs.gen_net
    gen_base = fit(os.path.join(workdir, "generator"),
                   lambda k: net.init(k, jnp.zeros((1, flat.shape[1])), jnp.zeros((1,)),
                                      jnp.zeros((1,), jnp.int32)),
                   progs.gen_loss, progs.gen_adam, (((flat - mu) / sd).astype(np.float32),),
                   int(config.gen_steps), seed0)
  curves = {k: [] for k in METHODS}
  params_of_last = {}
  one = int(np.argmin(np.abs(np.asarray(config.strength_grid, np.float64) - 1.0)))  # s x 1
  init_wm = progs.init_watermarker

  def one_run(job: tuple[int, str]):
    """One seed's watermarker of one method, its evaluation and its decoder distillation
    (and, latent, the generator's): ``(values in order, evaluation curves, parameters)``."""
    s, method = job
    seed = seed0 + 1 + s
    folder = os.path.join(workdir, f"seed{seed}")
    key = jax.random.key(seed)
    message = distseal.random_messages(jax.random.fold_in(key, 42), 1, int(config.bits))
    vals: dict[str, float] = {}
    run_dir = os.path.join(folder, method)
    init = {**init_wm(method, jax.random.fold_in(key, len(method))), FROZEN: {"ae": ae_params}}
    wm = fit(run_dir, init, progs.watermark_loss[method], progs.adam, (train_x, train_z),
             int(config.wm_steps), seed, with_step=True)
    del wm[FROZEN]
    ev = jax.device_get(progs.evaluate[method](ae_params, wm, eval_x, eval_z,
                                               jax.random.fold_in(key, 1)))
    for name, v in ev.items():
      vals[f"{method}_{name}"] = float(v[one])
    vals[f"{method}_acc_edited"] = float(np.mean([ev[f"acc_{e}"][one] for e, _ in EVAL_EDITS[1:]]))
    # decoder distillation of this watermarker
    teacher = progs.teacher[method]
    target_train = np.asarray(teacher(ae_params, wm, train_z, message))
    target_eval = np.asarray(teacher(ae_params, wm, eval_z, message))
    d_dir = os.path.join(folder, f"distill_{method}")
    rows = np.broadcast_to(np.asarray(message), (train_z.shape[0], int(config.bits)))
    # only the extractor rides along (the latent and pixel runs share one program)
    reader = {"extractor": wm["extractor"]}
    init = {"ae": ae_params, FROZEN: {"watermarker": reader}}
    student = fit(d_dir, init, progs.distill_loss, progs.distill_adam,
                  (train_z, target_train, np.ascontiguousarray(rows)),
                  int(config.distill_steps), seed)["ae"]
    dv = jax.device_get(progs.distilled(ae_params, student, reader, target_eval, eval_z,
                                        message, jax.random.fold_in(key, 2)))
    for name, v in dv.items():
      vals[f"distill_{method}_{name}"] = float(v)
    vals[f"distill_{method}_acc_edited"] = float(
        np.mean([dv[f"acc_{e}"] for e, _ in EVAL_EDITS[1:]]))
    if use_gen and method == "latent":
      # generator distillation: fine-tune a copy on the teacher's watermarked latents
      def watermarked(z):
        e = nets.embedder.apply(wm["embedder"], z,
                                jnp.broadcast_to(message, (z.shape[0], int(config.bits))))
        z_w = np.asarray(distseal.embed(z, e, programs.final_strength(config, "latent")))
        return ((z_w.reshape(z_w.shape[0], -1) - mu) / sd).astype(np.float32)

      z_w, eval_w = watermarked(train_z), watermarked(eval_z)

      def evaluate(params):
        gv = jax.device_get(progs.generated(ae_params, gen_base, params, wm, mu, sd, message,
                                            jax.random.fold_in(key, 3), z_w, eval_w))
        gv = {name: float(v) for name, v in gv.items()}
        gv["acc_edited"] = float(np.mean([gv[f"acc_{e_}"] for e_, _ in EVAL_EDITS[1:]]))
        return gv

      curve = programs.finetune_generator(config, progs, mesh, os.path.join(folder, "generator"),
                                          gen_base, z_w, seed, evaluate)
      last = programs.curve_steps(config)[-1]
      for name, v in curve[last].items():
        if not name.startswith("raw_"):
          vals[f"generator_{name}"] = v
      if config.get("gen_curve_steps", ()):  # the detection-versus-steps curve
        for k, values in curve.items():
          for name in ("tpr_identity", "acc_identity", "nn_ratio", "raw_tpr_identity",
                       "raw_acc_identity"):
            if name in values:
              vals[f"generator_curve_{name}_{k}"] = values[name]
    return vals, ev, wm

  # every seed's latent and pixel runs are independent: threads on a one-device CPU run, the
  # pixel runs (about 3x the latent ones' time) first, so the threads finish together
  jobs = [(s, method) for method in sorted(METHODS, key=lambda m_: m_ != "pixel")
          for s in range(int(config.num_seeds))]
  done = dict(zip(jobs, common.map_seeds(one_run, jobs)))
  for s in range(int(config.num_seeds)):
    for method in METHODS:
      vals, ev, params_of_last[method] = done[(s, method)]
      curves[method].append(ev)
      for name, v in vals.items():
        per.setdefault(name, []).append(v)
    # matched PSNR: the pixel curve read at the latent watermarker's PSNR (its own strength)
    lat, pix = curves["latent"][-1], curves["pixel"][-1]
    target = float(lat["psnr"][one])
    for e, _ in EVAL_EDITS:
      acc, inside = programs.matched_accuracy(pix["psnr"], pix[f"acc_{e}"], target)
      per.setdefault(f"pixel_matched_acc_{e}", []).append(acc)
    per.setdefault("pixel_matched_inside", []).append(float(inside))
    per.setdefault("pixel_matched_acc_edited", []).append(float(np.mean(
        [per[f"pixel_matched_acc_{e}"][-1] for e, _ in EVAL_EDITS[1:]])))
    per.setdefault("gap_posthoc_edited", []).append(
        per["latent_acc_edited"][-1] - per["pixel_matched_acc_edited"][-1])
    per.setdefault("gap_distill_edited", []).append(
        per["distill_latent_acc_edited"][-1] - per["distill_pixel_acc_edited"][-1])
  for name, values in per.items():
    v = np.asarray(values, np.float64)
    if not np.all(np.isfinite(v)):
      raise FloatingPointError(f"metric {name} is not finite: {values}")
    m[name] = float(v.mean())
    m[f"{name}_se"] = float(common.standard_error(v)) if len(v) > 1 else 0.0
  m.update(programs.embedding_timing(config, nets, params_of_last, seed0))
  m["embed_speedup"] = m["pixel_embed_s"] / m["latent_embed_s"]
  for method in METHODS:
    m[f"{method}_embed_flops"] = float(programs.embedder_flops(config, method))
  m["flops_ratio"] = m["pixel_embed_flops"] / m["latent_embed_flops"]
  m["size_ratio"] = float(np.prod(nets.input_shape("pixel")) / np.prod(nets.input_shape("latent")))
  m["fpr"] = float(config.fpr)
  m["eval_images"] = float(eval_x.shape[0])
  if use_gen:
    m["gen_samples"] = float(config.gen_samples)
  if jax.process_index() == 0:
    plots.plot_tradeoff(workdir, config, curves, EVAL_EDITS)
    if use_gen and config.get("gen_curve_steps", ()):
      plots.plot_generator_curve(workdir, config, programs.curve_steps(config), per)
  return m


# --------------------------------------------------------------------------- the mesh


def main_step(config: ml_collections.ConfigDict, key: jax.Array | None) -> sharding.Step:
  """The paper's main sharded computation at ``config``'s shapes: the latent watermarker's
  per-example loss on ``batch_size`` images, split over ``data`` (embedder, frozen
  decoder, a random edit, extractor). With a key: parameters and images drawn from it;
  with None: abstract."""
  nets = programs.Nets(config)
  b = int(config.batch_size)
  x_shape, z_shape = nets.input_shape("pixel", b), nets.input_shape("latent", b)
  if key is None:
    ae = jax.eval_shape(lambda: nets.init_ae(jax.random.key(0)))
    wm = jax.eval_shape(lambda: nets.init_watermarker("latent", jax.random.key(0)))
    args = (ae, wm, jax.ShapeDtypeStruct(x_shape, jnp.float32),
            jax.ShapeDtypeStruct(z_shape, jnp.float32))
  else:
    k1, k2, k3, k4 = jax.random.split(key, 4)
    init_wm = jax.jit(nets.init_watermarker, static_argnums=0)  # one program, not one per op
    args = (jax.device_get(jax.jit(nets.init_ae)(k1)), jax.device_get(init_wm("latent", k2)),
            np.asarray(jax.random.uniform(k3, x_shape)), np.asarray(jax.random.normal(k4, z_shape)))

  loss = programs.watermark_loss_fn(config, nets, "latent")
  last = jnp.int32(int(config.wm_steps) - 1)  # a step after edit_start: the edit applies

  def one(ae_params, wm_params, x, z):
    params = {**wm_params, FROZEN: {"ae": ae_params}}
    return loss(params, (x[None], z[None]), jax.random.key(0), last)[0][0]

  return sharding.Step(build=lambda mesh: sharding.vmap_sharded(one, mesh,
                                                                in_axes=(None, None, 0, 0)),
                       args=args)
