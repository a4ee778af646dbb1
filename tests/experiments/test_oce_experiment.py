"""The oce experiment's pieces and claims: verdicts computed from hand-made metrics.

The experiment's main sharded step (8 devices == 1) is checked by the every-paper
``tests/experiments/test_papers.py``.
"""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from reprojax.data import digits
from reprojax.experiments import digit_generator
from reprojax.experiments import registry
from reprojax.experiments.oce import claims
from reprojax.experiments.oce import programs


def _config():
  return registry.load_config("oce", "quick")


def _metrics(config, change=(0.01, 0.02), fd=(18.0, 20.0), erased=(0.0, 0.0), qualified=1,
             prob=(0.95, 0.90)):
  """Every metric the claims read; by default OCE beats both UCEs everywhere."""
  m = {"unedited/test_acc": 0.99, "classifier/test_acc": 0.98, "timing/oce_cached_s": 2.5,
       "timing/cache_s": 1.0, "timing/oce_cached_first_s": 5.0, "timing/uce_s": 0.3}
  for i, name in enumerate(config.erase_sets):
    grow = 1.0 + i  # UCE's change grows with the concepts, OCE's does not
    vals = {"oce": (change[0], fd[0], erased[0], prob[0])}
    for base in ("uce_kv", "uce_v", "oce_object"):
      vals[base] = (change[1] * grow, fd[1], erased[1], prob[1])
    for method, (c, f, e, p) in vals.items():
      m.update({f"{name}/{method}/test/erased_acc": e, f"{name}/{method}/test/erased_acc_se": 0.01,
                f"{name}/{method}/test/preserved_acc": 1.0,
                f"{name}/{method}/test/preserved_change": c,
                f"{name}/{method}/test/preserved_prob": p,
                f"{name}/{method}/test/fd_real": f, f"{name}/{method}/test/fd_unedited": f / 10,
                f"{name}/{method}/test/guide_rate": 0.5,
                f"{name}/{method}/pick_scale": 1.0, f"{name}/{method}/pick_qualified": qualified})
    m.update({f"{name}/unedited/erased_acc": 1.0, f"{name}/unedited/fd_real": 19.0,
              f"{name}/unedited/preserved_prob": 0.97, f"{name}/oce/max_norm_change": 1e-7})
    for base in ("uce_kv", "uce_v"):
      d = f"{name}/diff/oce_vs_{base}"
      m.update({f"{d}/erased_acc": erased[0] - erased[1], f"{d}/erased_acc_se": 0.01,
                f"{d}/preserved_change": change[0] - change[1] * grow,
                f"{d}/preserved_change_se": 0.001,
                f"{d}/preserved_prob": prob[0] - prob[1], f"{d}/preserved_prob_se": 0.005,
                f"{d}/fd_real": fd[0] - fd[1], f"{d}/fd_real_se": 0.2,
                f"{d}/fd_unedited": (fd[0] - fd[1]) / 10, f"{d}/fd_unedited_se": 0.02})
  return m


def _claims(config, m):
  return {c.id: c for c in claims.claims(config, m)}


_PER_TASK = ("preserved_prob", "fd_real", "fd_unedited", "oce_erases", "less_drift",
             "preserved_prob_uce_v", "fd_real_uce_v", "fd_unedited_uce_v", "less_drift_uce_v",
             "norms_kept")


def test_claims_hold_on_metrics_that_say_so():
  config = _config()
  got = _claims(config, _metrics(config))
  # the 4-digit task is the full config's: the quick run declares it not run
  not_run = {k for k, c in got.items() if c.evidence is not None and c.evidence.not_run}
  assert not_run == {f"{c}_1479" for c in _PER_TASK}
  assert all(c.holds for k, c in got.items() if k not in not_run), {
      k: c.holds for k, c in got.items()}
  paper = sorted(k for k, c in got.items() if c.kind == "paper" and k not in not_run)
  assert paper == sorted([f"{c}_{n}" for n in ("3", "25")
                          for c in ("preserved_prob", "fd_real", "fd_unedited", "oce_erases")]
                         + ["scales_with_concepts_kv", "hundred_concepts_time"])
  assert "change x1.00 for OCE, x2.00 for public UCE" in got["scales_with_concepts_kv"].ours
  full = registry.load_config("oce", "full")
  got = _claims(full, _metrics(full))
  assert all(c.holds for c in got.values()), {k: c.holds for k, c in got.items()}
  assert "from 1 to 4 erased concepts" in got["scales_with_concepts_kv"].statement


def test_claims_fail_on_metrics_that_say_so():
  config = _config()
  got = _claims(config, _metrics(config, change=(0.02, 0.001), fd=(21.0, 18.0),
                                 prob=(0.90, 0.95)))
  for c in ("preserved_prob", "fd_real", "fd_unedited", "less_drift", "preserved_prob_uce_v",
            "less_drift_uce_v"):
    assert not got[f"{c}_3"].holds, c
  # a probability gap inside 2 s.e. (0.005) does not count
  got = _claims(config, _metrics(config, prob=(0.905, 0.90)))
  assert not got["preserved_prob_3"].holds and got["less_drift_3"].holds
  got = _claims(config, _metrics(config, erased=(0.3, 0.0)))  # OCE erases worse: no match
  assert not got["preserved_prob_3"].holds and not got["oce_erases_3"].holds
  got = _claims(config, _metrics(config, qualified=0))
  assert not got["preserved_prob_25"].holds and "reached no strength" in \
      got["preserved_prob_25"].ours
  m = _metrics(config)
  m["unedited/test_acc"] = 0.5  # a generator that cannot draw digits decides nothing
  got = _claims(config, m)
  assert not got["generator_works"].holds and not got["oce_erases_3"].holds
  m = _metrics(config)
  m["timing/oce_cached_s"] = 5.0
  assert not _claims(config, m)["hundred_concepts_time"].holds


def test_preserved_probability_and_generic_prompts():
  labels = np.repeat(np.arange(10), 2)
  probs = np.full((20, 10), 0.05)
  probs[np.arange(20), labels] = 0.55
  probs[labels == 0, 0] = 0.1  # digit 0 drawn badly
  assert programs.preserved_probability(probs, labels, (3,)) == pytest.approx(
      (8 * 0.55 + 0.1) / 9)
  # C_g's captions: no evaluation prompt among them (the leak issue 66 names)
  evals = {digits.prompt(d, t, n) for d in range(10) for t in range(len(digits.TEMPLATES))
           for n in (False, True)}
  assert not set(programs.generic_prompts()) & evals


def test_pick_strength_and_score():
  # strengths 0..3: erased accuracy falls, change grows; the weakest that erases wins
  assert programs.pick_strength([0.9, 0.05, 0.0, 0.0], [0.1, 0.2, 0.3, 0.4], 0.1) == (1, True)
  assert programs.pick_strength([0.9, 0.5, 0.3], [0.1, 0.2, 0.3], 0.1) == (2, False)
  labels = np.repeat(np.arange(10), 2)
  pred = labels.copy()
  pred[labels == 3] = 8
  ref = np.zeros((20, 8, 8, 1), np.float32)
  img = ref.copy()
  img[labels == 0] = 0.5  # a preserved digit changed by 0.5 everywhere
  e, k, c = programs.score(pred, labels, (3,), img, ref)
  assert e == 0.0 and k == 1.0 and c == pytest.approx(0.25 / 9)


def test_frechet_distance_and_tasks():
  a = np.random.default_rng(0).normal(size=(4000, 3))
  assert programs.frechet_distance(a, a) == pytest.approx(0.0, abs=1e-6)
  assert programs.frechet_distance(a, a + 2.0) == pytest.approx(12.0, rel=1e-3)
  assert claims.tasks(_config()) == [("3", (3,), 8), ("25", (2, 5), 7)]
  bad = _config()
  bad.guides = ("3", "7")
  with pytest.raises(ValueError, match="guide digit outside"):
    claims.tasks(bad)


def test_prompt_bank_rows_are_the_encoder_at_the_concept_token():
  config = registry.load_config("oce", "tiny")
  model = digit_generator.make_model(config)
  shapes = jax.eval_shape(lambda k: digit_generator.init_params(model, k), jax.random.key(0))
  params = jax.tree.map(lambda s: 0.3 * np.random.default_rng(0).normal(size=s.shape).astype(
      np.float32), shapes)  # random weights without compiling the initialiser
  bank = programs.PromptBank(model, params)
  rows = bank.concept_rows((3, 5), (1,))  # (digit, template 1, word/numeral)
  tok = digits.tokenize([digits.prompt(3, 1), digits.prompt(3, 1, True), digits.prompt(5, 1),
                         digits.prompt(5, 1, True)])
  ctx, _ = jax.jit(model.encode)(params, jnp.asarray(tok))
  want = np.asarray(ctx)[np.arange(4), digits.last_token_index(tok)]
  np.testing.assert_allclose(rows, want, atol=1e-5)
  c = bank.generic_moment()
  np.testing.assert_allclose(c, c.T, atol=1e-6)
  assert np.all(np.linalg.eigvalsh(c) > -1e-5)
  gtok = digits.tokenize(programs.generic_prompts())
  gctx, gmask = jax.jit(model.encode)(params, jnp.asarray(gtok))
  h = np.asarray(gctx)[np.asarray(gmask)]
  np.testing.assert_allclose(c, h.T @ h / len(h), rtol=1e-4, atol=1e-6)
  # public UCE's retained rows: every token of the kept prompts, then the empty prompt's
  rows = bank.token_rows((5,), (1,))
  ctx5, mask5 = jax.jit(model.encode)(params, jnp.asarray(tok[2:]))
  np.testing.assert_allclose(rows[:-1], np.asarray(ctx5)[np.asarray(mask5)], atol=1e-5)
  assert len(rows) == int(np.asarray(mask5).sum()) + 1


def test_stop_and_resume_is_bit_identical(resumes_bit_identically):
  """The generator's training stopped after a checkpoint and resumed ends bit-identical to an
  uninterrupted run (the check is ``conftest.resumes_bit_identically``: the runs share one
  compiled step, each ``fit`` call would otherwise compile it anew, 5 s each)."""
  config = registry.load_config("oce", "tiny")
  config.num_steps, config.checkpoint_every = 12, 4
  train_split = digits.split(digits.load(), seed=0)[0]
  resumes_bit_identically(
      lambda workdir, mesh, stop_after: digit_generator.train_generator(
          config, str(workdir), mesh, train_split, stop_after=stop_after)[1],
      lambda workdir: workdir / "generator" / "checkpoints")


def test_uce_kv_edits_keys_and_values_and_sends_the_erased_rows_to_the_guide():
  config = registry.load_config("oce", "tiny")
  model = digit_generator.make_model(config)
  shapes = jax.eval_shape(lambda k: digit_generator.init_params(model, k), jax.random.key(0))
  params = jax.tree.map(lambda s: 0.3 * np.random.default_rng(1).normal(size=s.shape).astype(
      np.float32), shapes)
  bank = programs.PromptBank(model, params)
  task = programs.Task("3", (3,), 8, bank, (0, 1))
  edited = programs.uce_kv_variant(params, task, 1e4, config)
  for proj in ("to_k", "to_v"):
    w0, w1 = programs.attn_weights(params, proj), programs.attn_weights(edited, proj)
    assert w0 and set(w0) == set(w1)
    for n in w0:
      moved = np.asarray(task.erase @ w1[n].T)
      want = np.asarray(task.guide_paired @ w0[n].T)
      assert np.abs(moved - want).max() < 0.05 * np.abs(want).max(), (proj, n)
  q0 = programs.attn_weights(params, "to_q")
  q1 = programs.attn_weights(edited, "to_q")
  assert all(np.array_equal(q0[n], q1[n]) for n in q0)
