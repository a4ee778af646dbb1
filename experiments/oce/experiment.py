"""OCE against UCE on a text-conditioned flow model of digits, and the 100-concept timing.

1. **Generator.** :class:`reprojax.models.cond_unet.CondUNet` (text encoder,
   cross-attention at every resolution) learns the velocity of the straight
   noise-to-data flow (``algorithms.flow_matching``) on scikit-learn's digits,
   prompted "a photo of the digit three", "handwritten 3", ... (``data.digits``;
   the empty prompt 10% of the time, for classifier-free guidance), through
   ``experiments.train.fit`` (checkpointed: a rerun restores it). A frozen MLP
   classifier trained on the real digits scores what it generates.
2. **Erasure.** Per task (erase digit 3 toward 8; erase 2 and 5 at once toward
   7), concept embeddings are the text encoder's output at the concept token
   (the prompt's last, as the authors take it) of the edit templates, word and
   numeral. Four arms, each over a sweep of its erase strength:

   * ``oce`` (``algorithms.oce.oce_edit_layers`` on every ``to_v``): erase subspace,
     guide subspace, the other digits preserved, the generic second moment ``C_g``
     and ``lam W0 W0^T``. ``C_g`` comes from :data:`programs.GENERIC_TEMPLATES`, captions no
     evaluation prompt uses (the authors compute it on captions apart from the
     concepts' prompts).
   * ``oce_object``: the authors' object preset (``trainscripts/object.sh``): the
     preserved-concept weight 0, ``C_g`` weight 10, ``lam`` 10.
   * ``uce_kv``: UCE as its public code runs (``train-scripts/train_erase.py``,
     ``edit_model`` with ``to_k`` on): every ``to_k`` and ``to_v``, erase rows the
     concept token sent to the guide's, retain rows every token of the preserved
     digits' prompts and of the empty prompt, ``lam`` 0.5, retain weight 0.1.
   * ``uce_v``: our gentler UCE, ``to_v`` only, from concept-token rows (kept as a
     labelled extension).
3. **Tuning, then test.** On the validation split (the edit templates, one
   sampling seed) each arm's strength is the one that changes the other
   digits' images least among those whose erased-digit accuracy is at most
   ``erase_target``. The picks are scored on the test split: the other
   templates (never seen by the edit) and ``num_test_seeds`` fresh sampling
   seeds, paired across arms (same prompts, same noise): erased-digit
   accuracy, the classifier's mean probability of each preserved digit (the
   paper's kind of preservation score), preserved-digit accuracy, the change to
   the preserved digits' images (pixel MSE against the unedited model's: our
   stricter reading), Frechet distances in the classifier's feature space from
   generated preserved digits to real ones and to the unedited model's, and how
   often the erased prompts draw the guide.
4. **Timing.** 100 synthetic concepts erased at once on Stable Diffusion v1.4's
   16 cross-attention value projections (d_out 320/640/1280, d_in 768): the
   median of ``timing_repeats`` runs after the compiling one, with the
   concept-free terms cached and without, and UCE on the same shapes.
"""

from __future__ import annotations

import math
import time
from typing import Any

from absl import logging
import jax
import jax.numpy as jnp
import ml_collections
import numpy as np

from reprojax.data import digits
from reprojax.experiments import common
from reprojax.experiments import sharding
from reprojax.experiments.digit_generator import init_params
from reprojax.experiments.digit_generator import make_model
from reprojax.experiments.digit_generator import train_classifier
from reprojax.experiments.digit_generator import train_generator
from reprojax.experiments.oce import programs
from reprojax.experiments.oce.claims import tasks

CONFIG_RANGES = {
    "guidance": (0.0, math.inf), "erase_target": (0.0, 1.0), "min_unedited_acc": (0.0, 1.0),
    "z": (0.0, math.inf), "oce_erase_scales": (0.0, math.inf),
    "uce_erase_scales": (0.0, math.inf), "paper_seconds": (0.0, math.inf),
    "uce_kv_erase_scales": (0.0, math.inf), "uce_kv_lam": (0.0, math.inf),
    "object_erase_scales": (0.0, math.inf),
}


# ================================================================ the generator
# (experiments/digit_generator.py: the model, its training and the frozen classifier)

def main_step(config: ml_collections.ConfigDict, key: jax.Array | None) -> sharding.Step:
  """The paper's main sharded computation at ``config``'s shapes: one chunk of sampling.

  Every evaluation of an edit (the validation sweeps, the test seeds) is
  :func:`programs.make_sampler`'s program on chunks of ``sample_chunk`` images, one image
  per replica split over ``data``: the guided Euler integration of the
  generator's flow from a key and a prompt. The step is that program on one
  chunk. With a key: the generator's initial parameters, the replicas' keys and
  random prompts of the vocabulary drawn from it; with None:
  ``jax.ShapeDtypeStruct`` args only. (The generator's training step is
  ``train.make_train_step``, whose padding and masking make any mesh equal one
  device: ``tests/experiments/test_train.py``.)
  """
  model = make_model(config)
  program = programs.sample_program(model, config)
  n = int(config.sample_chunk)
  if key is None:
    params = jax.eval_shape(lambda: init_params(model, jax.random.key(0)))
    args = (jax.eval_shape(lambda: jax.random.split(jax.random.key(0), n)),
            jax.ShapeDtypeStruct((n, digits.MAX_LEN), jnp.int32), params)
  else:
    k_init, k_keys, k_tok = jax.random.split(key, 3)
    table = digits.prompt_table().reshape(-1, digits.MAX_LEN)
    rows = np.asarray(jax.random.randint(k_tok, (n,), 0, len(table)))
    args = (jax.random.split(k_keys, n), table[rows],
            jax.device_get(jax.jit(lambda k: init_params(model, k))(k_init)))
  return sharding.Step(build=lambda mesh: sharding.vmap_sharded(program, mesh,
                                                                in_axes=(0, 0, None)),
                       args=args)




def run(config: ml_collections.ConfigDict, workdir: str) -> dict[str, Any]:
  """The run of the module docstring: train (or restore) the generator and the classifier,
  tune and score every arm of every task, time the SD-shapes edit; the metrics dict."""
  t_start = time.time()
  task_list = tasks(config)
  mesh = sharding.config_mesh(config)
  key = jax.random.key(config.seed)
  k_clf, k_val, k_test, k_time = jax.random.split(key, 4)
  train_split, _, test_split = digits.split(digits.load(), seed=config.seed)

  t0 = time.time()
  model, params = train_generator(config, workdir, mesh, train_split)
  m = {"time/generator_s": time.time() - t0}
  clf = train_classifier(config, train_split, k_clf)
  m["classifier/test_acc"] = float(np.mean(programs.classify(clf, test_split.images)
                                           == test_split.labels))
  real_feats = programs.classifier_features(clf, test_split.images)
  sample = programs.make_sampler(model, config, mesh)
  bank = programs.PromptBank(model, params)
  generic = bank.generic_moment()

  # validation: the edit templates, one sampling seed; test: the other templates, fresh seeds
  val_tok, val_lab = programs.eval_prompts(config.edit_templates, config.num_val_per_digit)
  val_keys = jax.random.split(k_val, len(val_lab))
  tok1, lab1 = programs.eval_prompts(config.test_templates, config.num_test_per_digit)
  s_n = config.num_test_seeds
  test_tok, test_lab = np.tile(tok1, (s_n, 1)), np.tile(lab1, s_n)
  test_seed = np.repeat(np.arange(s_n), len(lab1))
  test_keys = jax.random.split(k_test, len(test_lab))

  t0 = time.time()
  val_ref = sample(params, val_tok, val_keys)
  test_ref = sample(params, test_tok, test_keys)
  ref_feats = programs.classifier_features(clf, test_ref)
  acc0 = programs.score(programs.classify(clf, test_ref), test_lab, (), test_ref, test_ref)[1]
  m["unedited/test_acc"] = acc0
  m["time/unedited_eval_s"] = time.time() - t0

  test_scores = programs.make_test_scores(clf, sample, test_tok, test_keys, test_lab,
                                          test_seed, s_n, test_ref, ref_feats, real_feats,
                                          test_split.labels)

  curves = {}
  for name, erased, guide in task_list:
    t0 = time.time()
    task = programs.Task(name, erased, guide, bank, config.edit_templates)
    pres = {"oce": programs.oce_preservation(params, task, generic, config),
            "oce_object": programs.oce_preservation(
                params, task, generic, config, preserve_scale=0.0,
                generic_scale=config.object_generic_scale, lam=config.object_lam)}
    base = test_scores(params, erased, guide, images=test_ref)  # the unedited images, again
    m[f"{name}/unedited/erased_acc"] = float(base[:, 0].mean())
    m[f"{name}/unedited/preserved_acc"] = float(base[:, 1].mean())
    m[f"{name}/unedited/preserved_prob"] = float(base[:, 3].mean())
    m[f"{name}/unedited/fd_real"] = float(base[:, 4].mean())
    picks = {}
    sweeps = {"oce": config.oce_erase_scales, "oce_object": config.object_erase_scales,
              "uce_kv": config.uce_kv_erase_scales, "uce_v": config.uce_erase_scales}
    for method in programs.METHODS:
      vals, variants = [], []
      for s in sweeps[method]:
        p = programs.edit_variant(method, params, task, s, pres, config)
        variants.append(p)
        images = sample(p, val_tok, val_keys)
        v = programs.score(programs.classify(clf, images), val_lab, erased, images, val_ref)
        vals.append(v)
        for what, x in zip(programs.METRICS, v):
          m[f"{name}/{method}/val/{what}/s{s:g}"] = x
      vals = np.array(vals)
      i, ok = programs.pick_strength(vals[:, 0], vals[:, 2], config.erase_target)
      curves[(name, method)] = (list(sweeps[method]), vals, i)
      m[f"{name}/{method}/pick_scale"] = float(sweeps[method][i])
      m[f"{name}/{method}/pick_qualified"] = int(ok)
      p = variants[i]
      per_seed = test_scores(p, erased, guide)
      picks[method] = per_seed
      for j, what in enumerate(programs.TEST_METRICS):
        m[f"{name}/{method}/test/{what}"] = float(per_seed[:, j].mean())
        m[f"{name}/{method}/test/{what}_se"] = float(common.standard_error(per_seed[:, j]))
      if method == "oce":  # what the rotation keeps, on the trained model's layers
        m[f"{name}/oce/max_norm_change"] = programs.max_norm_change(params, p, task)
    for a, b in programs.PAIRS:
      for j, what in enumerate(programs.TEST_METRICS):
        diff = picks[a][:, j] - picks[b][:, j]  # paired: same prompts and noise
        m[f"{name}/diff/{a}_vs_{b}/{what}"] = float(diff.mean())
        m[f"{name}/diff/{a}_vs_{b}/{what}_se"] = float(common.standard_error(diff))
    m[f"time/task_{name}_s"] = time.time() - t0
    logging.info("task %s: %s", name, {k: round(v, 4) for k, v in m.items()
                                       if k.startswith(f"{name}/") and "/val/" not in k})
  t0 = time.time()
  m.update({f"timing/{k}": v for k, v in programs.time_sd_shapes(config, k_time).items()})
  m["time/timing_s"] = time.time() - t0
  from reprojax.experiments.oce import plots  # pylint: disable=g-import-not-at-top
  plots.write_all(workdir, config, curves, m)
  m["time/total_s"] = time.time() - t_start
  return m

