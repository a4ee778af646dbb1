"""DynaDiff experiment: the claims on hand-made metrics, bad config, the medium config; and
the checks of the notebook's tiny run (``check_tiny_run``, called by
``tests/test_notebooks.py``)."""

import os

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from reprojax.algorithms import dynadiff as dd
from reprojax.experiments import config_check
from reprojax.experiments import registry
from reprojax.experiments.dynadiff import experiment
from reprojax.experiments.dynadiff.configs import medium

_CLAIMS = ["beats_baselines_inside", "beats_baselines_outside", "beats_nearest_expert",
           "shuffled_prompt_loses", "attention_helps", "functional_loss_helps",
           "prompter_helps", "generation_amortises_finetuning", "zoo_experts_fit"]


def check_tiny_run(config, m, workdir, again):
  """The notebook's tiny run end to end: every error in [0, cap], every timing positive, the
  figure, the zoo kept as a checkpoint (its restore: ``test_zoo_cache_restores_and_retrains``)."""
  del again  # no rerun (RERUN unset): the cache is tested on its own, in a second
  for name, v in m.items():
    assert np.isfinite(v), name
  for fam in config.families:
    for region in experiment.REGIONS:
      for meth in experiment.METHODS:
        assert 0.0 <= m[f"{fam}_{meth}_{region}"] <= dd.ERROR_CAP
    assert os.path.isfile(workdir / "zoo" / f"{fam}.json")
  assert m["num_seeds"] == config.num_seeds
  assert os.path.isfile(workdir / "errors.png")
  assert [c.id for c in experiment.claims(config, m)] == _CLAIMS
  timings = {k for k in m if experiment.is_timing(k)}
  assert timings and all(m[k] > 0 for k in timings if "match" not in k)


def test_zoo_cache_restores_and_retrains(tmp_path):
  """The zoo is trained once per workdir and config: a second call restores the same arrays
  without training; a changed fingerprint trains again."""
  calls = []

  def train_zoo():
    calls.append(1)
    return {"base": np.arange(3, dtype=np.float32) + len(calls),
            "experts": np.ones((4, 3), np.float32) * len(calls)}

  path = str(tmp_path / "zoo" / "oscillator")
  first = experiment.cached_zoo(path, "a", train_zoo)
  again = experiment.cached_zoo(path, "a", train_zoo)
  assert len(calls) == 1
  for k in first:
    np.testing.assert_array_equal(np.asarray(again[k]), first[k])
  other = experiment.cached_zoo(path, "b", train_zoo)
  assert len(calls) == 2 and float(np.asarray(other["experts"])[0, 0]) == 2.0
  config = registry.load_config("dynadiff", "tiny")
  assert experiment._zoo_fingerprint(config, "oscillator") != (  # pylint: disable=protected-access
      experiment._zoo_fingerprint(config, "lotka_volterra"))  # pylint: disable=protected-access


def _metrics(fams=("oscillator", "lotka_volterra"), gap=0.02, se=0.005):
  """Hand-made metrics: DynaDiff at 0.10 everywhere, every other method ``gap`` worse
  (s.e. of each paired difference ``se``); the zoo's experts beat the base."""
  m = {"num_seeds": 3.0, "num_families": float(len(fams))}
  for f in fams:
    m[f"{f}_zoo_own_err"], m[f"{f}_base_own_err"] = 0.05, 0.5
    m[f"{f}_generate_s"], m[f"{f}_finetune_step_s"] = 1e-3, 1e-4
    for r in experiment.REGIONS:
      for meth in experiment.METHODS:
        m[f"{f}_{meth}_{r}"] = 0.10 if meth == "dynadiff" else 0.10 + gap
        m[f"{f}_{meth}_{r}_se"] = 0.01
      m[f"{f}_best_baseline_{r}"] = float(experiment.BASELINES.index("coda"))
      m[f"{f}_improvement_{r}"] = 1 - 0.10 / (0.10 + gap)
      m[f"{f}_steps_to_match_{r}"], m[f"{f}_finetune_match_s_{r}"] = 50.0, 5e-3
      for other in experiment.BASELINES + ("shuffled", "no_functional", "no_attention",
                                           "true_params"):
        m[f"{f}_gap_{other}_{r}"], m[f"{f}_gap_{other}_{r}_se"] = gap, se
    for other in ("no_functional", "no_attention", "true_params"):
      m[f"{f}_gap_{other}_pooled"], m[f"{f}_gap_{other}_pooled_se"] = gap, se
  return m


def test_claims_on_hand_made_metrics():
  config = registry.load_config("dynadiff", "quick")
  c = {x.id: x for x in experiment.claims(config, _metrics())}
  assert list(c) == _CLAIMS
  assert all(x.holds for x in c.values())
  checks = {"beats_nearest_expert", "shuffled_prompt_loses", "zoo_experts_fit"}
  assert all(x.kind == ("check" if k in checks else "paper") for k, x in c.items())
  # evidence: 0.02 at s.e. 0.005 is 4 s.e., 2 s.e. above the claims' own bar of 2 s.e.
  assert all(abs(x.evidence.margin_se - 2.0) < 1e-9 and x.evidence.seeds == 3
             for k, x in c.items() if x.kind == "paper" and not x.evidence.timing)
  assert c["generation_amortises_finetuning"].evidence.timing
  # each difference just inside 2 s.e. of zero: every comparison fails
  c = {x.id: x for x in experiment.claims(config, _metrics(gap=0.0069, se=0.005))}
  assert [k for k, x in c.items() if x.holds] == ["generation_amortises_finetuning",
                                                  "zoo_experts_fit"]
  assert abs(c["beats_baselines_inside"].evidence.margin_se - (2 - 0.0069 / 0.005)) < 1e-9
  # one family failing fails a claim about every family
  m = _metrics()
  m["lotka_volterra_gap_coda_outside"] = -0.01
  m["lotka_volterra_gap_nearest_inside"] = -0.01
  c = {x.id: x for x in experiment.claims(config, m)}
  assert not c["beats_baselines_outside"].holds and c["beats_baselines_inside"].holds
  assert not c["beats_nearest_expert"].holds
  m["oscillator_zoo_own_err"] = 0.6
  assert not {x.id: x for x in experiment.claims(config, m)}["zoo_experts_fit"].holds
  # fine-tuning that reaches DynaDiff's error faster than generating loses the claim;
  # fine-tuning that never reaches it keeps it
  m["oscillator_finetune_match_s_inside"] = 0.9e-3
  assert not {x.id: x for x in experiment.claims(config, m)}[
      "generation_amortises_finetuning"].holds
  m["oscillator_steps_to_match_inside"] = -1.0
  assert {x.id: x for x in experiment.claims(config, m)}["generation_amortises_finetuning"].holds


def test_summary_picks_the_best_baseline_and_pairs_seeds():
  config = registry.load_config("dynadiff", "tiny")
  out = {"zoo_own_err": 0.05, "base_own_err": 0.5, "vae_recon": np.zeros((2, 3)),
         "generate_s": 1e-3, "finetune_step_s": 1e-4, "steps_to_match_inside": 30.0,
         "steps_to_match_outside": float("inf")}
  rng = np.random.default_rng(0)
  for r in experiment.REGIONS:
    for meth in experiment.METHODS:
      out[f"{meth}_{r}"] = rng.uniform(0.2, 0.3, 2)
    out[f"coda_{r}"] = np.array([0.15, 0.16])
    out[f"dynadiff_{r}"] = np.array([0.10, 0.14])
  m = experiment.summarise(config, {"oscillator": out})
  assert experiment.BASELINES[int(m["oscillator_best_baseline_inside"])] == "coda"
  np.testing.assert_allclose(m["oscillator_gap_coda_inside"], 0.035)
  np.testing.assert_allclose(m["oscillator_gap_coda_inside_se"], 0.015)  # |0.05 - 0.02| / 2
  np.testing.assert_allclose(m["oscillator_improvement_inside"], 1 - 0.12 / 0.155)
  np.testing.assert_allclose(m["oscillator_finetune_match_s_inside"], 3e-3)
  assert m["oscillator_steps_to_match_outside"] == -1.0


def test_bad_config(tmp_path):
  for field, value, match in (("families", ("pendulum",), "family"),
                              ("obs_steps", 8, "too short"),
                              ("generator", "unet", "generator")):
    config = registry.load_config("dynadiff", "tiny")
    with config.unlocked():
      config[field] = value
    with pytest.raises(ValueError, match=match):
      experiment.run(config, str(tmp_path))


def test_medium_config_is_quick_with_both_families_trained_longer():
  longer, quick = medium.get_config(), registry.load_config("dynadiff", "quick")
  config_check.validate(longer, config_check.paper_ranges("dynadiff"), check_mesh=False)
  differs = {k for k in quick.keys() if longer[k] != quick[k]}
  assert differs == {"scale", "families", "vae_steps", "vae_batch", "vae_lr", "gen_width",
                     "gen_steps"}


def test_pde_config_runs_the_kdv_burgers_family_with_fno_experts():
  """``configs/pde.py`` (not a registered scale) passes the config check; its networks turn
  an FNO expert into a weight graph and back exactly, and the prompter reads 6 mode
  coordinates."""
  from reprojax.experiments.dynadiff.configs import pde  # pylint: disable=g-import-not-at-top
  config = pde.get_config()
  config_check.validate(config, config_check.paper_ranges("dynadiff"), check_mesh=False)
  nets = experiment.Nets(config, "kdv_burgers")
  params = nets.init_expert(jax.random.key(0))
  flat = nets.graph_of(params)
  assert flat.shape == (nets.graph_size,) and nets.num_nodes == 8 + 8 + 8 + 16 + 1
  back = nets.params_of(flat)
  assert all(jax.tree.leaves(jax.tree.map(lambda a, b: np.array_equal(a, b), params, back)))
  u = jnp.ones((3, 64))
  assert nets.step_with(flat)(u).shape == (3, 64)
  assert nets.cond_dim == dd.num_features(int(config.num_freqs), 6)
