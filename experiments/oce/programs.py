"""What the OCE experiment computes: sampling and scoring the digit generator, the prompt bank
of concept embeddings, the four edit arms (OCE, OCE's object preset, UCE as its public code
runs, our gentler UCE), the validation pick, the held-out scores, and the timing of 100
concepts on Stable Diffusion v1.4's shapes. ``experiment.run`` orchestrates these; the
generator and the frozen classifier are ``experiments/digit_generator.py``'s.
"""

from __future__ import annotations

import time
from typing import Any

import flax
import jax
import jax.numpy as jnp
import numpy as np
import scipy.linalg

from reprojax.algorithms import flow_matching as fm
from reprojax.algorithms import oce
from reprojax.data import digits
from reprojax.experiments import common
from reprojax.experiments import sharding
from reprojax.experiments.digit_generator import empty_tokens
from reprojax.models import cond_unet

# Stable Diffusion v1.4's 16 cross-attention value projections (attn2.to_v), d_out each:
# down blocks 1-3 (two each), the middle block, up blocks 1-3 (three each); d_in = 768.
SD14_TO_V_OUT = (320, 320, 640, 640, 1280, 1280, 1280, 1280, 1280, 1280, 640, 640, 640,
                 320, 320, 320)
SD14_TEXT_WIDTH = 768

METRICS = ("erased_acc", "preserved_acc", "preserved_change")
# preserved_prob: the classifier's mean probability of each preserved digit (the paper's kind
# of preservation score); fd_real / fd_unedited: Frechet distance of generated preserved digits
# to real ones / to the unedited model's for the same prompts and noise; guide_rate: the erased
# digits' prompts drawn as the guide digit (what UCE's least squares asks for)
TEST_METRICS = METRICS + ("preserved_prob", "fd_real", "fd_unedited", "guide_rate")
# the arms: OCE as configured, OCE with the authors' object preset, UCE as its public code
# runs (to_k and to_v, every token) and our gentler UCE (to_v, concept tokens)
METHODS = ("oce", "oce_object", "uce_kv", "uce_v")
# the paired comparisons reported (first minus second)
PAIRS = (("oce", "uce_kv"), ("oce", "uce_v"), ("oce_object", "uce_kv"))


# ================================================================ the classifier

def logits(clf, images):
  """The frozen classifier's logits ``(N, 10)`` of images ``(N, 8, 8, 1)``."""
  return clf[0].apply(clf[1], jnp.asarray(images.reshape(len(images), -1)))


def classify(clf, images):
  """The classifier's digit per image ``(N,)``."""
  return np.asarray(jnp.argmax(logits(clf, images), -1))


def probabilities(clf, images):
  """The classifier's softmax ``(N, 10)``."""
  return np.asarray(jax.nn.softmax(logits(clf, images), -1))


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
  program = sharding.vmap_sharded(sample_program(model, config), mesh, in_axes=(0, 0, None))
  chunk = int(config.sample_chunk)

  def sample(params, tokens_NxL, keys_N):
    n = len(tokens_NxL)
    idx = np.arange(-(-n // chunk) * chunk) % n  # padded with the first images again
    tok, keys = np.asarray(tokens_NxL)[idx], keys_N[jnp.asarray(idx)]
    out = [program(keys[i:i + chunk], jnp.asarray(tok[i:i + chunk]), params)
           for i in range(0, len(idx), chunk)]  # dispatched, then fetched once
    return np.concatenate([np.asarray(o) for o in out])[:n]

  return sample


def sample_program(model, config):
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


# Generic captions for C_g: templates of the prompt vocabulary that no evaluation prompt uses
# (data.digits.TEMPLATES holds the edit/validation and test templates), each with every digit
# as a word and a numeral, as the authors' C_g averages captions that mention objects.
GENERIC_TEMPLATES = (
    "a photo of the number {}",
    "a drawing of the digit {}",
    "an image of the digit {}",
    "a picture of the number {}",
    "the digit {}",
    "handwritten digit {}",
    "a drawing of {}",
    "number {}",
)


def generic_prompts() -> list[str]:
  """The prompts of :data:`GENERIC_TEMPLATES`: every digit, word and numeral (160)."""
  if set(GENERIC_TEMPLATES) & set(digits.TEMPLATES):
    raise ValueError("GENERIC_TEMPLATES must be disjoint from data.digits.TEMPLATES")
  return [t.format(w) for t in GENERIC_TEMPLATES for d in range(10)
          for w in (digits.NUMBER_WORDS[d], digits.NUMERALS[d])]


class PromptBank:
  """The text encoder's output for every (digit, template, word/numeral) prompt, the empty
  one and the generic captions, computed in one jitted call: the concept rows, the retained
  rows of UCE and ``C_g`` are read from it."""

  def __init__(self, model, params):
    table = digits.prompt_table()  # (10, T, 2, L)
    self.shape = table.shape[:3]
    evals = table.reshape(-1, digits.MAX_LEN)
    generic = digits.tokenize(generic_prompts())
    tok = np.concatenate([evals, np.asarray(empty_tokens(1)), generic])
    ctx, mask = jax.jit(model.encode)(params, jnp.asarray(tok))
    ctx, mask = np.asarray(ctx), np.asarray(mask)
    n = len(evals) + 1  # the evaluation prompts, then the empty one
    self.ctx, self.mask = ctx[:n], mask[:n]
    self.generic_ctx, self.generic_mask = ctx[n:], mask[n:]
    self.last = digits.last_token_index(tok[:n])

  def _index(self, concept_digits, templates) -> np.ndarray:
    return np.array([np.ravel_multi_index((d, t, n), self.shape) for d in concept_digits
                     for t in templates for n in (0, 1)], np.int64)

  def concept_rows(self, concept_digits, templates) -> np.ndarray:
    """The output at each prompt's concept (last) token: ``(C, I)`` rows, one per (digit,
    template, word/numeral), digits outermost."""
    idx = self._index(concept_digits, templates)
    return self.ctx[idx, self.last[idx]]

  def token_rows(self, concept_digits, templates, empty: bool = True) -> np.ndarray:
    """Every non-padding token's output of the prompts of ``concept_digits`` (and of the
    empty prompt): the rows public UCE retains ``(R, I)``."""
    idx = self._index(concept_digits, templates)
    rows = self.ctx[idx][self.mask[idx]]
    return np.concatenate([rows, self.ctx[-1][self.mask[-1]]]) if empty else rows

  def generic_moment(self) -> np.ndarray:
    """``C_g``: the uncentred second moment of every non-padding token of the generic
    captions (:func:`generic_prompts`), none of which an evaluation uses."""
    h = self.generic_ctx[self.generic_mask]
    return (h.T @ h / len(h)).astype(np.float32)


# ================================================================ the edits

def attn_weights(params, proj: str) -> dict[str, np.ndarray]:
  """Every cross-attention ``proj`` ("to_k" or "to_v") kernel as ``W0 (d_out, d_in)``, by path."""
  if proj == "to_v":
    return cond_unet.value_weights(params)
  flat = flax.traverse_util.flatten_dict(flax.core.unfreeze(params))
  return {"/".join(k[:-1]): flat[k].T for k in sorted(flat) if k[-2:] == (proj, "kernel")}


def with_attn_weights(params, proj: str, weights) -> Any:
  """``params`` with the named ``proj`` kernels replaced by ``weights[path]`` ``(d_out, d_in)``."""
  if proj == "to_v":
    return cond_unet.with_value_weights(params, weights)
  flat = flax.traverse_util.flatten_dict(flax.core.unfreeze(params))
  for name, w in weights.items():
    key = tuple(name.split("/")) + ("kernel",)
    if key[-2] != proj or key not in flat or tuple(np.shape(w)) != flat[key].shape[::-1]:
      raise ValueError(f"weights[{name!r}]: not a {proj} kernel of shape (d_out, d_in)")
    flat[key] = jnp.asarray(w, flat[key].dtype).T
  return flax.traverse_util.unflatten_dict(flat)


class Task:
  """What one erasure needs: the rows of the erased, guide and preserved concepts."""

  def __init__(self, name, erased, guide, bank: PromptBank, templates):
    self.name, self.erased, self.guide = name, erased, guide
    self.kept = tuple(d for d in range(10) if d not in erased)
    self.erase = bank.concept_rows(erased, templates)
    self.guide_rows = bank.concept_rows((guide,), templates)  # one per (template, form)
    self.guide_paired = np.tile(self.guide_rows, (len(erased), 1))  # row e -> the guide's row
    self.preserve = bank.concept_rows(self.kept, templates)
    # public UCE retains every token of the preserved prompts and of the empty prompt
    self.retain_all = bank.token_rows(self.kept, templates)


def oce_variant(params, task: Task, scale, preservation):
  w = cond_unet.value_weights(params)
  new = oce.oce_edit_layers(list(w.values()), task.erase, task.guide_rows,
                            preservation=preservation, erase_scale=scale)
  return cond_unet.with_value_weights(params, dict(zip(w, new)))


def uce_variant(params, task: Task, scale, config):
  """Our gentler UCE (``uce_v``): every ``to_v``, concept-token rows."""
  w = cond_unet.value_weights(params)
  new = oce.uce_edit_layers(list(w.values()), task.erase, task.guide_paired, task.preserve,
                            erase_scale=scale, preserve_scale=config.uce_preserve_scale,
                            lam=config.uce_lam)
  return cond_unet.with_value_weights(params, dict(zip(w, new)))


def uce_kv_variant(params, task: Task, scale, config):
  """UCE as its public code runs (``uce_kv``): every ``to_k`` and ``to_v``; the erase rows
  (the concept token: in this encoder no attended position follows it) sent to the guide
  prompt's rows; retained rows every token of the preserved prompts and the empty prompt."""
  for proj in ("to_v", "to_k"):
    w = attn_weights(params, proj)
    new = oce.uce_edit_layers(list(w.values()), task.erase, task.guide_paired, task.retain_all,
                              erase_scale=scale, preserve_scale=config.uce_kv_preserve_scale,
                              lam=config.uce_kv_lam)
    params = with_attn_weights(params, proj, dict(zip(w, new)))
  return params


def oce_preservation(params, task: Task, generic, config, preserve_scale=None,
                     generic_scale=None, lam=None):
  pick = lambda x, d: d if x is None else x  # noqa: E731
  return [oce.preservation_term(
      w, task.preserve, generic,
      preserve_scale=pick(preserve_scale, config.oce_preserve_scale),
      generic_scale=pick(generic_scale, config.oce_generic_scale),
      lam=pick(lam, config.oce_lam)) for w in cond_unet.value_weights(params).values()]


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


def preserved_probability(probs_NxK, labels_N, erased) -> float:
  """The classifier's mean softmax probability of the prompted digit, averaged per preserved
  digit then over them (the paper's ``eval_clip_acc``: a classifier's mean probability of
  each non-target class)."""
  kept = [d for d in range(10) if d not in erased]
  return float(np.mean([probs_NxK[labels_N == d, d].mean() for d in kept]))


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


# ================================================================ what the run measures

def max_norm_change(params, edited, task: Task) -> float:
  """max over layers and probe rows of | ||W_new k|| / ||W0 k|| - 1 |, k all concept rows."""
  rows = np.concatenate([task.erase, task.preserve])
  w0, w1 = cond_unet.value_weights(params), cond_unet.value_weights(edited)
  return float(max(np.max(np.abs(np.linalg.norm(rows @ np.asarray(w1[n]).T, axis=1)
                                 / np.linalg.norm(rows @ np.asarray(w0[n]).T, axis=1) - 1.0))
                   for n in w0))



def edit_variant(method: str, params, task: Task, scale, preservation, config):
  """``params`` edited by arm ``method`` (one of :data:`METHODS`) at erase strength ``scale``:
  the OCE arms with their concept-free terms ``preservation[method]``, else a UCE arm."""
  if method in preservation:
    return oce_variant(params, task, scale, preservation[method])
  if method == "uce_kv":
    return uce_kv_variant(params, task, scale, config)
  return uce_variant(params, task, scale, config)


def make_test_scores(clf, sample, tokens_NxL, keys_N, labels_N, seed_N, num_seeds: int,
                     reference_N, reference_feats_NxF, real_feats_MxF, real_labels_M):
  """``test_scores(params, erased, guide, images=None) -> (S, 7)``: per sampling seed, the
  columns of :data:`TEST_METRICS` on the held-out prompts ``tokens_NxL`` (digits
  ``labels_N``, sampling seed ``seed_N``, noise ``keys_N``), the images paired with the
  unedited model's ``reference_N`` (their classifier features ``reference_feats_NxF``) and
  the Frechet distances taken to the real test digits' features ``real_feats_MxF``.
  ``images`` given: those are scored instead of sampling ``params``."""

  def test_scores(p, erased, guide, images=None):
    images = sample(p, tokens_NxL, keys_N) if images is None else images
    probs = probabilities(clf, images)
    pred = np.argmax(probs, -1)
    per_seed = np.array([score(pred[seed_N == s], labels_N[seed_N == s], erased,
                               images[seed_N == s], reference_N[seed_N == s])
                         for s in range(num_seeds)])  # (S, 3)
    prob = np.array([preserved_probability(probs[seed_N == s], labels_N[seed_N == s],
                                           erased) for s in range(num_seeds)])
    kept = [d for d in range(10) if d not in erased]
    feats = classifier_features(clf, images)
    real = real_feats_MxF[np.isin(real_labels_M, kept)]
    on_kept = np.isin(labels_N, kept)
    fd_real = np.array([frechet_distance(feats[(seed_N == s) & on_kept], real)
                        for s in range(num_seeds)])
    fd_ref = np.array([frechet_distance(feats[(seed_N == s) & on_kept],
                                        reference_feats_NxF[(seed_N == s) & on_kept])
                       for s in range(num_seeds)])
    on_erased = np.isin(labels_N, erased)
    to_guide = np.array([np.mean(pred[(seed_N == s) & on_erased] == guide)
                         for s in range(num_seeds)])
    return np.concatenate([per_seed, prob[:, None], fd_real[:, None], fd_ref[:, None],
                           to_guide[:, None]], axis=1)  # (S, 7), columns TEST_METRICS

  return test_scores
