"""The oce experiment's pieces and claims: verdicts computed from hand-made metrics.

The experiment's main sharded step (8 devices == 1) is checked by the every-paper
``tests/experiments/test_papers.py``.
"""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from reprojax.data import digits
from reprojax.experiments import registry
from reprojax.experiments.oce import experiment


def _config():
  return registry.load_config("oce", "quick")


def _metrics(config, change=(0.01, 0.02), fd=(18.0, 20.0), erased=(0.0, 0.0), qualified=1):
  """Every metric the claims read; by default OCE beats UCE everywhere."""
  m = {"unedited/test_acc": 0.99, "classifier/test_acc": 0.98, "timing/oce_cached_s": 2.5,
       "timing/cache_s": 1.0, "timing/oce_cached_first_s": 5.0, "timing/uce_s": 0.3}
  for i, name in enumerate(config.erase_sets):
    grow = 1.0 + i  # UCE's change grows with the concepts, OCE's does not
    for method, c, f, e in (("oce", change[0], fd[0], erased[0]),
                            ("uce", change[1] * grow, fd[1], erased[1])):
      m.update({f"{name}/{method}/test/erased_acc": e, f"{name}/{method}/test/erased_acc_se": 0.01,
                f"{name}/{method}/test/preserved_acc": 1.0,
                f"{name}/{method}/test/preserved_change": c, f"{name}/{method}/test/fd": f,
                f"{name}/{method}/test/guide_rate": 0.5,
                f"{name}/{method}/pick_scale": 1.0, f"{name}/{method}/pick_qualified": qualified})
    m.update({f"{name}/unedited/erased_acc": 1.0, f"{name}/unedited/fd": 19.0,
              f"{name}/oce/max_norm_change": 1e-7,
              f"{name}/diff/erased_acc": erased[0] - erased[1], f"{name}/diff/erased_acc_se": 0.01,
              f"{name}/diff/preserved_change": change[0] - change[1] * grow,
              f"{name}/diff/preserved_change_se": 0.001,
              f"{name}/diff/fd": fd[0] - fd[1], f"{name}/diff/fd_se": 0.2})
  return m


def _claims(config, m):
  return {c.id: c for c in experiment.claims(config, m)}


def test_claims_hold_on_metrics_that_say_so():
  config = _config()
  got = _claims(config, _metrics(config))
  # the 4-digit task is the full config's: the quick run declares it not run
  not_run = {k for k, c in got.items() if c.evidence is not None and c.evidence.not_run}
  assert not_run == {f"{c}_1479" for c in ("better_preservation", "better_quality",
                                           "oce_erases", "norms_kept")}
  assert all(c.holds for k, c in got.items() if k not in not_run), {
      k: c.holds for k, c in got.items()}
  paper = sorted(k for k, c in got.items() if c.kind == "paper" and k not in not_run)
  assert paper == sorted(["better_preservation_3", "better_quality_3", "oce_erases_3",
                          "better_preservation_25", "better_quality_25", "oce_erases_25",
                          "scales_with_concepts", "hundred_concepts_time"])
  assert "change x1.00 for OCE, x2.00 for UCE" in got["scales_with_concepts"].ours
  full = registry.load_config("oce", "full")
  got = _claims(full, _metrics(full))
  assert all(c.holds for c in got.values()), {k: c.holds for k, c in got.items()}
  assert "from 1 to 4 erased concepts" in got["scales_with_concepts"].statement


def test_claims_fail_on_metrics_that_say_so():
  config = _config()
  got = _claims(config, _metrics(config, change=(0.02, 0.001), fd=(21.0, 18.0)))
  assert not got["better_preservation_3"].holds and not got["better_quality_3"].holds
  got = _claims(config, _metrics(config, erased=(0.3, 0.0)))  # OCE erases worse: no match
  assert not got["better_preservation_3"].holds and not got["oce_erases_3"].holds
  got = _claims(config, _metrics(config, qualified=0))
  assert not got["better_preservation_25"].holds and "reached no strength" in \
      got["better_preservation_25"].ours
  m = _metrics(config)
  m["unedited/test_acc"] = 0.5  # a generator that cannot draw digits decides nothing
  got = _claims(config, m)
  assert not got["generator_works"].holds and not got["oce_erases_3"].holds
  m = _metrics(config)
  m["timing/oce_cached_s"] = 5.0
  assert not _claims(config, m)["hundred_concepts_time"].holds


def test_pick_strength_and_score():
  # strengths 0..3: erased accuracy falls, change grows; the weakest that erases wins
  assert experiment.pick_strength([0.9, 0.05, 0.0, 0.0], [0.1, 0.2, 0.3, 0.4], 0.1) == (1, True)
  assert experiment.pick_strength([0.9, 0.5, 0.3], [0.1, 0.2, 0.3], 0.1) == (2, False)
  labels = np.repeat(np.arange(10), 2)
  pred = labels.copy()
  pred[labels == 3] = 8
  ref = np.zeros((20, 8, 8, 1), np.float32)
  img = ref.copy()
  img[labels == 0] = 0.5  # a preserved digit changed by 0.5 everywhere
  e, k, c = experiment.score(pred, labels, (3,), img, ref)
  assert e == 0.0 and k == 1.0 and c == pytest.approx(0.25 / 9)


def test_frechet_distance_and_tasks():
  a = np.random.default_rng(0).normal(size=(4000, 3))
  assert experiment.frechet_distance(a, a) == pytest.approx(0.0, abs=1e-6)
  assert experiment.frechet_distance(a, a + 2.0) == pytest.approx(12.0, rel=1e-3)
  assert experiment.tasks(_config()) == [("3", (3,), 8), ("25", (2, 5), 7)]
  bad = _config()
  bad.guides = ("3", "7")
  with pytest.raises(ValueError, match="guide digit outside"):
    experiment.tasks(bad)


def test_prompt_bank_rows_are_the_encoder_at_the_concept_token():
  config = registry.load_config("oce", "tiny")
  model = experiment.make_model(config)
  shapes = jax.eval_shape(lambda k: experiment.init_params(model, k), jax.random.key(0))
  params = jax.tree.map(lambda s: 0.3 * np.random.default_rng(0).normal(size=s.shape).astype(
      np.float32), shapes)  # random weights without compiling the initialiser
  bank = experiment.PromptBank(model, params)
  rows = bank.concept_rows((3, 5), (1,))  # (digit, template 1, word/numeral)
  tok = digits.tokenize([digits.prompt(3, 1), digits.prompt(3, 1, True), digits.prompt(5, 1),
                         digits.prompt(5, 1, True)])
  ctx, _ = jax.jit(model.encode)(params, jnp.asarray(tok))
  want = np.asarray(ctx)[np.arange(4), digits.last_token_index(tok)]
  np.testing.assert_allclose(rows, want, atol=1e-5)
  c = bank.generic_moment()
  np.testing.assert_allclose(c, c.T, atol=1e-6)
  assert np.all(np.linalg.eigvalsh(c) > -1e-5)


def test_stop_and_resume_is_bit_identical(resumes_bit_identically):
  """The generator's training stopped after a checkpoint and resumed ends bit-identical to an
  uninterrupted run (the check is ``conftest.resumes_bit_identically``: the runs share one
  compiled step, each ``fit`` call would otherwise compile it anew, 5 s each)."""
  config = registry.load_config("oce", "tiny")
  config.num_steps, config.checkpoint_every = 12, 4
  train_split = digits.split(digits.load(), seed=0)[0]
  resumes_bit_identically(
      lambda workdir, mesh, stop_after: experiment.train_generator(
          config, str(workdir), mesh, train_split, stop_after=stop_after)[1],
      lambda workdir: workdir / "generator" / "checkpoints")
