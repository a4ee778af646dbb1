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
   numeral. OCE (``algorithms.oce.oce_edit_layers``: erase subspace, guide
   subspace, the other digits preserved, the generic second moment ``C_g`` of all
   prompt tokens, ``lam W0 W0^T``) and UCE (``uce_edit_layers``: erase rows sent
   to the guide's values, the other digits preserved) edit every ``to_v``, each
   over a sweep of its erase strength.
3. **Tuning, then test.** On the validation split (the edit templates, one
   sampling seed) each method's strength is the one that changes the other
   digits' images least among those whose erased-digit accuracy is at most
   ``erase_target``. The picks are scored on the test split: the other
   templates (never seen by the edit) and ``num_test_seeds`` fresh sampling
   seeds, paired across methods (same prompts, same noise): erased-digit
   accuracy, preserved-digit accuracy, the change to the preserved digits'
   images (pixel MSE against the unedited model's), a Frechet distance in the
   classifier's feature space between generated and real preserved digits,
   and how often the erased prompts draw the guide.
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
import scipy.linalg

from reprojax.algorithms import flow_matching as fm
from reprojax.algorithms import oce
from reprojax.data import digits
from reprojax.experiments import common
from reprojax.experiments import results
from reprojax.experiments import sharding
from reprojax.experiments.digit_generator import empty_tokens
from reprojax.experiments.digit_generator import init_params
from reprojax.experiments.digit_generator import make_model
from reprojax.experiments.digit_generator import train_classifier
from reprojax.experiments.digit_generator import train_generator
from reprojax.experiments.results import Claim
from reprojax.experiments.results import Evidence
from reprojax.experiments.results import margin_in_se
from reprojax.models import cond_unet

CONFIG_RANGES = {
    "guidance": (0.0, math.inf), "erase_target": (0.0, 1.0), "min_unedited_acc": (0.0, 1.0),
    "z": (0.0, math.inf), "oce_erase_scales": (0.0, math.inf),
    "uce_erase_scales": (0.0, math.inf), "paper_seconds": (0.0, math.inf),
}

# Stable Diffusion v1.4's 16 cross-attention value projections (attn2.to_v), d_out each:
# down blocks 1-3 (two each), the middle block, up blocks 1-3 (three each); d_in = 768.
SD14_TO_V_OUT = (320, 320, 640, 640, 1280, 1280, 1280, 1280, 1280, 1280, 640, 640, 640,
                 320, 320, 320)
SD14_TEXT_WIDTH = 768


def tasks(config) -> list[tuple[str, tuple[int, ...], int]]:
  """``(name, erased digits, guide digit)`` per task: ``("3", (3,), 8)``, ``("25", (2, 5), 7)``."""
  if len(config.erase_sets) != len(config.guides):
    raise ValueError(f"config.erase_sets and config.guides must pair up, got "
                     f"{len(config.erase_sets)} and {len(config.guides)}")
  out = []
  for e, g in zip(config.erase_sets, config.guides):
    erased = tuple(int(ch) for ch in e)
    if not erased or len(set(erased)) != len(erased) or int(g) in erased or len(str(g)) != 1:
      raise ValueError(f"config.erase_sets entry {e!r} with guide {g!r}: need distinct digits "
                       "and a guide digit outside them")
    out.append((e, erased, int(g)))
  return out


# ================================================================ the generator
# (experiments/digit_generator.py: the model, its training and the frozen classifier)

def main_step(config: ml_collections.ConfigDict, key: jax.Array | None) -> sharding.Step:
  """The paper's main sharded computation at ``config``'s shapes: one chunk of sampling.

  Every evaluation of an edit (the validation sweeps, the test seeds) is
  :func:`make_sampler`'s program on chunks of ``sample_chunk`` images, one image
  per replica split over ``data``: the guided Euler integration of the
  generator's flow from a key and a prompt. The step is that program on one
  chunk. With a key: the generator's initial parameters, the replicas' keys and
  random prompts of the vocabulary drawn from it; with None:
  ``jax.ShapeDtypeStruct`` args only. (The generator's training step is
  ``train.make_train_step``, whose padding and masking make any mesh equal one
  device: ``tests/experiments/test_train.py``.)
  """
  model = make_model(config)
  program = _sample_program(model, config)
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


# ================================================================ the classifier

def classifier_features(clf, images_NxHxWx1) -> np.ndarray:
  """The classifier's last hidden features ``(N, F)``, for the Frechet distance."""
  model, params = clf
  x = jnp.asarray(images_NxHxWx1.reshape(len(images_NxHxWx1), -1))
  return np.asarray(model.apply(params, x, features=True))


def frechet_distance(a_NxF: np.ndarray, b_MxF: np.ndarray) -> float:
  """Frechet distance between Gaussians fitted to two feature sets (the FID formula)."""
  a, b = np.asarray(a_NxF, np.float64), np.asarray(b_MxF, np.float64)
  ca, cb = np.cov(a, rowvar=False), np.cov(b, rowvar=False)
  root = np.real(scipy.linalg.sqrtm(ca @ cb))
  return float(np.sum((a.mean(0) - b.mean(0)) ** 2) + np.trace(ca + cb - 2.0 * root))


# ================================================================ sampling and scoring

def make_sampler(model, config, mesh):
  """``sample(params, tokens_NxL, keys_N) -> images (N, 8, 8, 1)``, images split over ``data``.

  One image per replica: Euler steps of the guided velocity
  ``v(x | empty) + guidance (v(x | prompt) - v(x | empty))``, clipped to [-1, 1].
  Images go through in chunks of ``config.sample_chunk`` (the last padded), so
  every batch size runs one compiled program.
  """
  program = sharding.vmap_sharded(_sample_program(model, config), mesh, in_axes=(0, 0, None))
  chunk = int(config.sample_chunk)

  def sample(params, tokens_NxL, keys_N):
    n = len(tokens_NxL)
    idx = np.arange(-(-n // chunk) * chunk) % n  # padded with the first images again
    tok, keys = np.asarray(tokens_NxL)[idx], keys_N[jnp.asarray(idx)]
    out = [program(keys[i:i + chunk], jnp.asarray(tok[i:i + chunk]), params)
           for i in range(0, len(idx), chunk)]  # dispatched, then fetched once
    return np.concatenate([np.asarray(o) for o in out])[:n]

  return sample


def _sample_program(model, config):
  """One image: ``(key, tokens_L, params) -> (8, 8, 1)`` (vmapped over replicas by the caller)."""
  steps, scale = int(config.sample_steps), float(config.guidance)

  def one(key, tokens_L, params):
    x0 = jax.random.normal(key, (1, 64))
    both = jnp.stack([tokens_L, empty_tokens(1)[0]])

    def velocity(x, t):
      out = model.apply(params, jnp.concatenate([x, x]).reshape(2, 8, 8, 1),
                        jnp.concatenate([t, t]), both).reshape(2, 64)
      return fm.guided_velocity(out[:1], out[1:], scale)

    return jnp.clip(fm.euler_sample(velocity, x0, steps).reshape(8, 8, 1), -1.0, 1.0)

  return one


def eval_prompts(templates, per_digit: int) -> tuple[np.ndarray, np.ndarray]:
  """``per_digit`` prompts per digit cycling over (template, word/numeral): tokens, digits."""
  combos = [(t, n) for t in templates for n in (False, True)]
  texts, labels = [], []
  for d in range(10):
    for i in range(per_digit):
      t, n = combos[i % len(combos)]
      texts.append(digits.prompt(d, t, n))
      labels.append(d)
  return digits.tokenize(texts), np.asarray(labels, np.int32)


class PromptBank:
  """The text encoder's output for every (digit, template, word/numeral) prompt and the empty
  one, computed in one jitted call: the concept rows and ``C_g`` are read from it."""

  def __init__(self, model, params):
    table = digits.prompt_table()  # (10, T, 2, L)
    self.shape = table.shape[:3]
    tok = np.concatenate([table.reshape(-1, digits.MAX_LEN), np.asarray(empty_tokens(1))])
    ctx, mask = jax.jit(model.encode)(params, jnp.asarray(tok))
    self.ctx, self.mask = np.asarray(ctx), np.asarray(mask)
    self.last = digits.last_token_index(tok)

  def concept_rows(self, concept_digits, templates) -> np.ndarray:
    """The output at each prompt's concept (last) token: ``(C, I)`` rows, one per (digit,
    template, word/numeral), digits outermost."""
    idx = np.array([np.ravel_multi_index((d, t, n), self.shape) for d in concept_digits
                    for t in templates for n in (0, 1)], np.int64)
    return self.ctx[idx, self.last[idx]]

  def generic_moment(self) -> np.ndarray:
    """``C_g``: the uncentred second moment of every non-padding token of every prompt."""
    h = self.ctx[self.mask]
    return (h.T @ h / len(h)).astype(np.float32)


# ================================================================ the edits

class Task:
  """What one erasure needs: the rows of the erased, guide and preserved concepts."""

  def __init__(self, name, erased, guide, bank: PromptBank, templates):
    self.name, self.erased, self.guide = name, erased, guide
    self.kept = tuple(d for d in range(10) if d not in erased)
    self.erase = bank.concept_rows(erased, templates)
    self.guide_rows = bank.concept_rows((guide,), templates)  # one per (template, form)
    self.guide_paired = np.tile(self.guide_rows, (len(erased), 1))  # row e -> the guide's row
    self.preserve = bank.concept_rows(self.kept, templates)


def oce_variant(params, task: Task, scale, preservation):
  w = cond_unet.value_weights(params)
  new = oce.oce_edit_layers(list(w.values()), task.erase, task.guide_rows,
                            preservation=preservation, erase_scale=scale)
  return cond_unet.with_value_weights(params, dict(zip(w, new)))


def uce_variant(params, task: Task, scale, config):
  w = cond_unet.value_weights(params)
  new = oce.uce_edit_layers(list(w.values()), task.erase, task.guide_paired, task.preserve,
                            erase_scale=scale, preserve_scale=config.uce_preserve_scale,
                            lam=config.uce_lam)
  return cond_unet.with_value_weights(params, dict(zip(w, new)))


def oce_preservation(params, task: Task, generic, config):
  return [oce.preservation_term(w, task.preserve, generic,
                                preserve_scale=config.oce_preserve_scale,
                                generic_scale=config.oce_generic_scale, lam=config.oce_lam)
          for w in cond_unet.value_weights(params).values()]


def score(pred_N, labels_N, erased, images_N, reference_N) -> tuple[float, float, float]:
  """(erased digits' accuracy, preserved digits' accuracy, preserved digits' change).

  The change is the mean squared pixel difference between the edited model's
  image and the unedited model's image for the same prompt and noise, over the
  preserved digits' prompts (0: untouched; images lie in [-1, 1]).
  """
  acc = np.array([np.mean(pred_N[labels_N == d] == d) for d in range(10)])
  kept = [d for d in range(10) if d not in erased]
  on_kept = np.isin(labels_N, kept)
  change = np.mean(np.square(images_N[on_kept] - reference_N[on_kept]))
  return float(acc[list(erased)].mean()) if erased else float("nan"), float(acc[kept].mean()), \
      float(change)


def pick_strength(erased_acc, change, target) -> tuple[int, bool]:
  """The validation pick: the least change to the preserved digits among strengths whose
  erased accuracy is <= target (the smaller strength on a tie); without any, the lowest
  erased accuracy. Returns (index, qualified)."""
  e, c = np.asarray(erased_acc), np.asarray(change)
  ok = np.flatnonzero(e <= target)
  if ok.size:
    return int(ok[np.argmin(c[ok])]), True
  return int(np.argmin(e)), False


# ================================================================ timing on SD shapes

def sd_shapes_problem(key, num_concepts: int, divisor: int = 1):
  """Synthetic layers and concepts at Stable Diffusion v1.4's to_v shapes (float32), every
  width divided by ``divisor`` (1: the real shapes; the tiny config shrinks them)."""
  ks = jax.random.split(key, len(SD14_TO_V_OUT) + 4)
  i = SD14_TEXT_WIDTH // divisor
  weights = [np.asarray(jax.random.normal(k, (o // divisor, i)) / np.sqrt(i))
             for k, o in zip(ks, SD14_TO_V_OUT)]
  erase = np.asarray(jax.random.normal(ks[-4], (num_concepts, i)))
  guide = np.asarray(jax.random.normal(ks[-3], (1, i)))
  preserve = np.asarray(jax.random.normal(ks[-2], (num_concepts, i)))
  g = np.asarray(jax.random.normal(ks[-1], (4 * i, i)))
  return weights, erase, guide, preserve, (g.T @ g / (4 * i)).astype(np.float32)


def _timed(fn, repeats):
  """(the first call's seconds, compilation included; the median of ``repeats`` after it)."""
  t0 = time.perf_counter()
  jax.block_until_ready(fn())
  return time.perf_counter() - t0, common.median_seconds(fn, repeats, warmup=0)


def time_sd_shapes(config, key) -> dict[str, float]:
  """Seconds to erase ``timing_concepts`` concepts at once on SD v1.4's 16 to_v shapes.

  ``oce_cached``: the concept-free terms (:func:`oce.preservation_term`, one per
  layer) computed beforehand, once per model; ``oce_full``: everything in the
  call (only with ``config.timing_full``); ``uce``: UCE's solve per layer. Each: the first call (compiling) and the
  median of ``timing_repeats`` calls after it. Concept embeddings are inputs:
  text encoding is not timed (the public code's figure includes it).
  """
  weights, erase, guide, preserve, generic = sd_shapes_problem(key, config.timing_concepts,
                                                               config.timing_width_divisor)
  kw = dict(preserve_scale=config.oce_preserve_scale, generic_scale=config.oce_generic_scale,
            lam=config.oce_lam)
  t0 = time.perf_counter()
  terms = jax.block_until_ready([oce.preservation_term(w, preserve, generic, **kw)
                                 for w in weights])
  cache_s = time.perf_counter() - t0
  out = {"cache_s": cache_s}
  reps = int(config.timing_repeats)
  out["oce_cached_first_s"], out["oce_cached_s"] = _timed(
      lambda: oce.oce_edit_layers(weights, erase, guide, preservation=terms, erase_scale=1000.0),
      reps)
  if config.timing_full:
    out["oce_full_first_s"], out["oce_full_s"] = _timed(
        lambda: oce.oce_edit_layers(weights, erase, guide, preserve, generic, erase_scale=1000.0,
                                    **kw), max(1, reps // 2))
  paired = np.repeat(guide, len(erase), axis=0)
  out["uce_first_s"], out["uce_s"] = _timed(
      lambda: oce.uce_edit_layers(weights, erase, paired, preserve), max(1, reps // 2))
  return out


# ================================================================ the run

def _classify(clf, images):
  return np.asarray(jnp.argmax(clf[0].apply(clf[1], jnp.asarray(images.reshape(len(images), -1))),
                               -1))


METRICS = ("erased_acc", "preserved_acc", "preserved_change")
# fd: Frechet distance of generated to real preserved digits; guide_rate: the erased digits'
# prompts drawn as the guide digit (what UCE's least squares asks for)
TEST_METRICS = METRICS + ("fd", "guide_rate")


def run(config: ml_collections.ConfigDict, workdir: str) -> dict[str, Any]:
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
  m["classifier/test_acc"] = float(np.mean(_classify(clf, test_split.images) == test_split.labels))
  real_feats = classifier_features(clf, test_split.images)
  sample = make_sampler(model, config, mesh)
  bank = PromptBank(model, params)
  generic = bank.generic_moment()

  # validation: the edit templates, one sampling seed; test: the other templates, fresh seeds
  val_tok, val_lab = eval_prompts(config.edit_templates, config.num_val_per_digit)
  val_keys = jax.random.split(k_val, len(val_lab))
  tok1, lab1 = eval_prompts(config.test_templates, config.num_test_per_digit)
  s_n = config.num_test_seeds
  test_tok, test_lab = np.tile(tok1, (s_n, 1)), np.tile(lab1, s_n)
  test_seed = np.repeat(np.arange(s_n), len(lab1))
  test_keys = jax.random.split(k_test, len(test_lab))

  t0 = time.time()
  val_ref = sample(params, val_tok, val_keys)
  test_ref = sample(params, test_tok, test_keys)
  acc0 = score(_classify(clf, test_ref), test_lab, (), test_ref, test_ref)[1]
  m["unedited/test_acc"] = acc0
  m["time/unedited_eval_s"] = time.time() - t0

  def test_scores(p, erased, guide, images=None):
    images = sample(p, test_tok, test_keys) if images is None else images
    pred = _classify(clf, images)
    per_seed = np.array([score(pred[test_seed == s], test_lab[test_seed == s], erased,
                               images[test_seed == s], test_ref[test_seed == s])
                         for s in range(s_n)])  # (S, 3)
    kept = [d for d in range(10) if d not in erased]
    feats = classifier_features(clf, images)
    real = real_feats[np.isin(test_split.labels, kept)]
    fd = np.array([frechet_distance(feats[(test_seed == s) & np.isin(test_lab, kept)], real)
                   for s in range(s_n)])
    on_erased = np.isin(test_lab, erased)
    to_guide = np.array([np.mean(pred[(test_seed == s) & on_erased] == guide) for s in range(s_n)])
    return np.concatenate([per_seed, fd[:, None], to_guide[:, None]], axis=1)  # (S, 5)

  curves = {}
  for name, erased, guide in task_list:
    t0 = time.time()
    task = Task(name, erased, guide, bank, config.edit_templates)
    pres = oce_preservation(params, task, generic, config)
    base = test_scores(params, erased, guide, images=test_ref)  # the unedited images, again
    m[f"{name}/unedited/erased_acc"] = float(base[:, 0].mean())
    m[f"{name}/unedited/preserved_acc"] = float(base[:, 1].mean())
    m[f"{name}/unedited/fd"] = float(base[:, 3].mean())
    picks = {}
    for method, scales in (("oce", config.oce_erase_scales), ("uce", config.uce_erase_scales)):
      vals, variants = [], []
      for s in scales:
        p = (oce_variant(params, task, s, pres) if method == "oce"
             else uce_variant(params, task, s, config))
        variants.append(p)
        images = sample(p, val_tok, val_keys)
        v = score(_classify(clf, images), val_lab, erased, images, val_ref)
        vals.append(v)
        for what, x in zip(METRICS, v):
          m[f"{name}/{method}/val/{what}/s{s:g}"] = x
      vals = np.array(vals)
      i, ok = pick_strength(vals[:, 0], vals[:, 2], config.erase_target)
      curves[(name, method)] = (list(scales), vals, i)
      m[f"{name}/{method}/pick_scale"] = float(scales[i])
      m[f"{name}/{method}/pick_qualified"] = int(ok)
      p = variants[i]
      per_seed = test_scores(p, erased, guide)
      picks[method] = per_seed
      for j, what in enumerate(TEST_METRICS):
        m[f"{name}/{method}/test/{what}"] = float(per_seed[:, j].mean())
        m[f"{name}/{method}/test/{what}_se"] = float(common.standard_error(per_seed[:, j]))
      if method == "oce":  # what the rotation keeps, on the trained model's layers
        m[f"{name}/oce/max_norm_change"] = _max_norm_change(params, p, task)
    for j, what in enumerate(TEST_METRICS):
      diff = picks["oce"][:, j] - picks["uce"][:, j]  # paired: same prompts and noise
      m[f"{name}/diff/{what}"] = float(diff.mean())
      m[f"{name}/diff/{what}_se"] = float(common.standard_error(diff))
    m[f"time/task_{name}_s"] = time.time() - t0
    logging.info("task %s: %s", name, {k: round(v, 4) for k, v in m.items()
                                       if k.startswith(f"{name}/") and "/val/" not in k})
  t0 = time.time()
  m.update({f"timing/{k}": v for k, v in time_sd_shapes(config, k_time).items()})
  m["time/timing_s"] = time.time() - t0
  from reprojax.experiments.oce import plots  # pylint: disable=g-import-not-at-top
  plots.write_all(workdir, config, curves, m)
  m["time/total_s"] = time.time() - t_start
  return m


def _max_norm_change(params, edited, task: Task) -> float:
  """max over layers and probe rows of | ||W_new k|| / ||W0 k|| - 1 |, k all concept rows."""
  rows = np.concatenate([task.erase, task.preserve])
  w0, w1 = cond_unet.value_weights(params), cond_unet.value_weights(edited)
  return float(max(np.max(np.abs(np.linalg.norm(rows @ np.asarray(w1[n]).T, axis=1)
                                 / np.linalg.norm(rows @ np.asarray(w0[n]).T, axis=1) - 1.0))
                   for n in w0))


# ================================================================ claims

def _what(erased) -> str:
  return f"digit {erased[0]}" if len(erased) == 1 else "digits " + " and ".join(map(str, erased))


def _conjunction_margin(parts) -> float | None:
  """The margin in s.e. of a verdict that needs every part: ``parts`` are (passes, margin)
  pairs. A holding verdict flips when its weakest part does (the least margin); a failing
  one only when every failing part does (the largest of theirs)."""
  if not parts:
    return None
  if all(ok for ok, _ in parts):
    return min(mg for _, mg in parts)
  return max(mg for ok, mg in parts if not ok)


def _better_margin(d, se, z, match_part, pre_ok) -> float | None:
  """The margin of "OCE better": the paired difference ``d`` beyond ``z`` s.e. below 0, and
  matched erasure (``match_part``); None where a precondition decided the verdict."""
  if not pre_ok:
    return None
  return _conjunction_margin([match_part, (d < -z * se, margin_in_se(d, -z * se, se))])


def _task_declared(name: str, what: str, guide: int, config: str = "") -> tuple:
  """The four claims of one erasure task (``name``: its ``config.erase_sets`` entry)."""
  pre = ("the generator_works check holds, both OCE and UCE reached a strength on the "
         "validation prompts with erased accuracy <= config.erase_target (0.1), and OCE's "
         "held-out erased-digit accuracy minus UCE's, paired over config.num_test_seeds "
         "sampling seeds, is <= config.z (2) s.e. (matched erasure); then ")
  return (
      results.Declared(
          id=f"better_preservation_{name}", kind="paper",
          statement=f"erasing {what} (toward {guide}), OCE changes the other digits' images "
                    "less than UCE at matched erasure (strengths tuned on validation prompts, "
                    "scored on held-out ones)",
          paper="OCE outperforms editing baselines (UCE) in non-target preservation",
          rule=pre + "the paired mean difference (OCE minus UCE) of the other digits' pixel "
                     "MSE to the unedited images is below -config.z (2) s.e.",
          config=config),
      results.Declared(
          id=f"better_quality_{name}", kind="paper",
          statement=f"erasing {what}, OCE's other digits are closer to real ones than UCE's "
                    "(Frechet distance in the classifier's features, the FID of this model)",
          paper="OCE keeps generation quality better than UCE (FID)",
          rule=pre + "the paired mean difference (OCE minus UCE) of the other digits' Frechet "
                     "distance to real digits in the classifier's features is below -config.z "
                     "(2) s.e.",
          config=config),
      results.Declared(
          id=f"oce_erases_{name}", kind="paper",
          statement=f"OCE erases {what}: its accuracy on held-out prompts falls to the target",
          paper="precise concept erasure",
          rule="the generator_works check holds and OCE's erased-digit accuracy on held-out "
               "prompts (mean over config.num_test_seeds) is <= config.erase_target (0.1)",
          config=config),
      results.Declared(
          id=f"norms_kept_{name}", kind="check",
          statement="the orthogonal edit keeps every value's norm (so angles between values "
                    "too)",
          paper="neuron magnitude and angular geometry preserved (by construction)",
          rule="OCE's max relative change of a value's norm, over layers and concept rows, "
               "is < 1e-4",
          config=config),
  )


# The thresholds CLAIMS' rules state: z, erase_target, min_unedited_acc, paper_seconds.
_RULE_CONFIG = {"z": 2.0, "erase_target": 0.1, "min_unedited_acc": 0.8, "paper_seconds": 4.3}

CLAIMS = results.declare(
    results.Declared(
        id="generator_works", kind="check",
        statement="the unedited generator draws the digit it is asked for (held-out prompts)",
        paper=">= 80% by the frozen classifier (ours, a precondition)",
        rule="the unedited generator's held-out accuracy by the frozen classifier is >= "
             "config.min_unedited_acc (0.8)"),
    *_task_declared("3", "digit 3", 8),
    *_task_declared("25", "digits 2 and 5", 7),
    *_task_declared("1479", "digits 1 and 4 and 7 and 9", 0, config="full"),
    results.Declared(
        id="scales_with_concepts", kind="paper",
        statement="from fewer to more erased concepts, OCE's change to the other digits grows "
                  "less than UCE's (the subspace objective against additive conflicts)",
        paper="subspace-level objective: more effective and scalable multi-concept erasure",
        rule="made when the tasks differ in size: the generator_works check holds and the "
             "ratio of the other digits' pixel MSE change (task with most erased digits over "
             "task with fewest) is smaller for OCE than for UCE (no s.e.)"),
    results.Declared(
        id="hundred_concepts_time", kind="paper",
        statement="100 concepts erased at once on SD v1.4's 16 cross-attention shapes within "
                  "the paper's 4.3 s",
        paper="4.3 s (GPU, text encoding included)",
        rule="the median of config.timing_repeats timed calls (after a compiling one) of "
             "OCE's edit of config.timing_concepts concepts on SD v1.4's 16 cross-attention "
             "shapes, concept-free terms cached, is <= config.paper_seconds (4.3 s)"),
)


def claims(config: ml_collections.ConfigDict, m) -> list[Claim]:
  """The paper's claims, checked on the metrics ``m`` of :func:`run` (a pure function of both).

  Evidence: every comparison runs on one trained generator (``config.seed``), so it counts
  as one seed; ``config.num_test_seeds`` paired sampling seeds give the s.e. of the margins,
  which is sampling noise on that generator only (the README's 800-step generator flips
  the FD verdict on digit 3 and the held-out erasure of 2 and 5).

  Each claim is declared, with its rule, in :data:`CLAIMS`; a config with other thresholds
  than the rules state is refused.
  """
  got = {k: float(config[k]) for k in _RULE_CONFIG}
  if got != _RULE_CONFIG:
    raise ValueError(f"config's {sorted(_RULE_CONFIG)} must be the declared rules' "
                     f"{_RULE_CONFIG} (a changed rule takes new claim ids), got {got}")
  z = float(config.z)
  gens = 1  # one trained generator: the sampling seeds do not resample it
  one_gen = (f"one generator; the s.e. is over {int(config.num_test_seeds)} paired sampling "
             "seeds on it")
  generator_ok = m["unedited/test_acc"] >= config.min_unedited_acc
  out = [CLAIMS["generator_works"].claim(
      ours=(f"{m['unedited/test_acc']:.1%} (classifier on real test digits "
            f"{m['classifier/test_acc']:.1%})"), holds=generator_ok)]
  task_list = tasks(config)
  for name, erased, guide in task_list:
    g = lambda k, n=name: m[f"{n}/{k}"]  # noqa: E731
    what = _what(erased)
    oce_e, uce_e = g("oce/test/erased_acc"), g("uce/test/erased_acc")
    d_e, se_e = g("diff/erased_acc"), g("diff/erased_acc_se")
    both_ok = bool(g("oce/pick_qualified")) and bool(g("uce/pick_qualified"))
    matched = generator_ok and both_ok and d_e <= z * max(se_e, 1e-12)  # OCE erases no worse
    tail = ("" if both_ok else "; a method reached no strength with erased accuracy <= "
            f"{config.erase_target:.0%} on validation")
    d_c, se_c = g("diff/preserved_change"), g("diff/preserved_change_se")
    se_e_ = max(se_e, 1e-12)
    # OCE erases no worse (the matched-erasure part); a failed precondition (the generator
    # check, or a method with no qualifying strength) decides a verdict with no margin.
    match_part = (d_e <= z * se_e_, margin_in_se(d_e, z * se_e_, se_e))
    pre_ok = generator_ok and both_ok
    out.append(CLAIMS[f"better_preservation_{name}"].claim(
        statement=(f"erasing {what} (toward {guide}), OCE changes the other digits' images "
                   "less than UCE at matched erasure (strengths tuned on validation prompts, "
                   "scored on held-out ones)"),
        ours=f"pixel MSE to the unedited images {g('oce/test/preserved_change'):.4f} vs "
        f"{g('uce/test/preserved_change'):.4f} (diff {d_c:+.4f} +- {se_c:.4f}); erased-digit "
        f"accuracy {oce_e:.1%} vs {uce_e:.1%}; other digits' accuracy "
        f"{g('oce/test/preserved_acc'):.1%} vs {g('uce/test/preserved_acc'):.1%}; strengths "
        f"{g('oce/pick_scale'):g} / {g('uce/pick_scale'):g}" + tail,
        holds=matched and d_c < -z * se_c,
        evidence=Evidence(seeds=gens, margin_se=_better_margin(d_c, se_c, z, match_part, pre_ok),
                          note=one_gen)))
    d_f, se_f = g("diff/fd"), g("diff/fd_se")
    below = g("oce/test/fd") < g("unedited/fd")
    out.append(CLAIMS[f"better_quality_{name}"].claim(
        statement=(f"erasing {what}, OCE's other digits are closer to real ones than UCE's "
                   "(Frechet distance in the classifier's features, the FID of this model)"),
        ours=f"FD {g('oce/test/fd'):.2f} vs {g('uce/test/fd'):.2f} (diff {d_f:+.2f} +- {se_f:.2f}; "
        f"unedited {g('unedited/fd'):.2f})" + tail,
        holds=matched and d_f < -z * se_f,
        evidence=Evidence(
            seeds=gens, margin_se=_better_margin(d_f, se_f, z, match_part, pre_ok),
            note=(f"OCE's FD is below the unedited model's ({g('oce/test/fd'):.2f} < "
                  f"{g('unedited/fd'):.2f}): FD sees OCE shift the drawings, not keep them, so "
                  "this is not evidence of kept quality (README); " if below else "") + one_gen)))
    out.append(CLAIMS[f"oce_erases_{name}"].claim(
        statement=f"OCE erases {what}: its accuracy on held-out prompts falls to the target",
        ours=f"{g('unedited/erased_acc'):.1%} -> {oce_e:.1%} (target <= {config.erase_target:.0%}; "
        f"UCE {uce_e:.1%}); drawn as the guide {guide}: OCE {g('oce/test/guide_rate'):.0%}, "
        f"UCE {g('uce/test/guide_rate'):.0%}",
        holds=generator_ok and oce_e <= config.erase_target,
        evidence=Evidence(
            seeds=gens,
            margin_se=(margin_in_se(oce_e, config.erase_target, g("oce/test/erased_acc_se"))
                       if generator_ok else None),
            note=(f"the strength was picked on validation prompts to reach the same "
                  f"{config.erase_target:.0%}; " + one_gen))))
    out.append(CLAIMS[f"norms_kept_{name}"].claim(
        ours=f"max relative norm change {g('oce/max_norm_change'):.1e}",
        holds=g("oce/max_norm_change") < 1e-4))
  few, many = min(task_list, key=lambda t: len(t[1])), max(task_list, key=lambda t: len(t[1]))
  if len(many[1]) > len(few[1]):
    ratio = {k: m[f"{many[0]}/{k}/test/preserved_change"] /
             max(m[f"{few[0]}/{k}/test/preserved_change"], 1e-12) for k in ("oce", "uce")}
    out.append(CLAIMS["scales_with_concepts"].claim(
        statement=(f"from {len(few[1])} to {len(many[1])} erased concepts, OCE's change to the "
                   "other digits grows less than UCE's (the subspace objective against "
                   "additive conflicts)"),
        ours=f"change x{ratio['oce']:.2f} for OCE, x{ratio['uce']:.2f} for UCE",
        holds=generator_ok and ratio["oce"] < ratio["uce"],
        evidence=Evidence(
            seeds=gens, margin_se=None,  # no s.e. of a ratio of two tasks' means is measured
            note=(f"{len(few[1])} and {len(many[1])} concepts only; OCE's strengths "
                  f"{m[f'{few[0]}/oce/pick_scale']:g} and {m[f'{many[0]}/oce/pick_scale']:g} "
                  "(picked on a 2x grid), " + one_gen))))
  t = m["timing/oce_cached_s"]
  full = (f"; {m['timing/oce_full_s']:.2f} s without the cache" if "timing/oce_full_s" in m
          else "")
  out.append(CLAIMS["hundred_concepts_time"].claim(
      statement=(f"{config.timing_concepts} concepts erased at once on SD v1.4's 16 "
                 f"cross-attention shapes within the paper's {config.paper_seconds:g} s"),
      ours=f"{t:.2f} s median of {config.timing_repeats} on this CPU, concept-free terms cached "
      f"({m['timing/cache_s']:.1f} s once per model){full}; first call "
      f"{m['timing/oce_cached_first_s']:.2f} s with compilation; UCE {m['timing/uce_s']:.2f} s",
      holds=t <= config.paper_seconds,
      evidence=Evidence(
          seeds=1, timing=True,
          after_change=("a2d089a: make reproduce runs the timed papers alone, after this claim "
                        "failed with oce running beside another paper"),
          note=(f"median of {config.timing_repeats} calls in one run; the first call, "
                f"compilation included, took {m['timing/oce_cached_first_s']:.2f} s; the "
                "paper's figure is a GPU time with text encoding"))))
  return results.as_declared(out, CLAIMS)
