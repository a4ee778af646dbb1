"""The ising_aggregation claims: verdicts computed from hand-made metrics.

The experiment's main sharded step (8 devices == 1) is checked by the every-paper
``tests/experiments/test_papers.py``.
"""

from reprojax.experiments import registry
from reprojax.experiments.ising_aggregation import claims



def _config():
  return registry.load_config("ising_aggregation", "quick")


def _metrics(config, ising=0.93, ci=0.90, small_k_ising=0.75):
  """Every metric the claims read: Ising above CI (by 0.03) from K = 5, below it for K < 5."""
  m = {}
  acc = lambda k: {"mv": ci - 0.01, "ci_weighted": ci, "ising_indep": ising if k >= 5 else  # noqa: E731
                   small_k_ising, "ising_dep": ising if k >= 5 else small_k_ising,
                   "ising_dep_10pct": 0.95, "bayes": 0.96}
  cells = [f"synth_K{k}_n{config.synth_items}" for k in config.synth_ks]
  cells += [f"bloc_K{k}_n{config.synth_items}" for k in config.bloc_ks]
  cells += [f"semi_K{k}" for k in config.semi_ks]
  for cell in cells:
    k = int(cell.split("_K")[1].split("_")[0])
    m.update({f"{cell}_{meth}_acc": a for meth, a in acc(k).items()})
  m.update(crowd_mv_acc=0.8966, crowd_ds_two_coin_acc=0.9391, crowd_ds_one_coin_acc=0.8784,
           crowd_latent_factor_acc=0.9103, flip_bayes_posterior=0.456, flip_ci_posterior=0.915,
           flip_ci_sensitivity=0.8, flip_ci_specificity=0.772)
  for i, k in enumerate(config.cw_ks):
    m[f"cw_K{k}_ci_risk"] = 0.41 - 0.02 * i
    m[f"cw_K{k}_bayes_risk"] = 0.2 * 10.0 ** (-5 * i)
  return m


def _verdicts(config, m):
  return {c.id: bool(c.holds) for c in claims.claims(config, m)}


def test_claims_hold_on_metrics_that_say_so():
  config = _config()
  got = _verdicts(config, _metrics(config))
  assert all(got.values()), got
  ours = {c.id: c.ours for c in claims.claims(config, _metrics(config))}
  assert "sens 0.800, spec 0.772" in ours["finite_k_flip"]
  kinds = {c.id: c.kind for c in claims.claims(config, _metrics(config))}
  assert {k for k, v in kinds.items() if v == "baseline"} == {"crowd_mv", "crowd_ds"}
  assert list(got) == list(claims.CLAIMS)  # every declared claim, in declared order
  # A run without the crowd labels (use_crowd_data False) measures all but the two baselines.
  m = {k: v for k, v in _metrics(config).items() if not k.startswith("crowd_")}
  assert list(_verdicts(config, m)) == [i for i in claims.CLAIMS if not i.startswith("crowd_")]


def test_claims_fail_on_metrics_that_say_so():
  config = _config()
  got = _verdicts(config, _metrics(config, ising=0.89))  # Ising below CI everywhere
  assert not any(got[c] for c in ("synth_ising_beats_ci", "bloc_ising_beats_ci",
                                  "gain_from_5_judges", "semi_real_ising_beats_ci"))
  m = _metrics(config, small_k_ising=0.99)  # a gain at K = 3 as well: not "from 5 judges"
  assert _verdicts(config, m) == {**_verdicts(config, _metrics(config)), "gain_from_5_judges": False}
  m = _metrics(config)
  m.update(crowd_mv_acc=0.85, crowd_ds_two_coin_acc=0.90, flip_ci_posterior=0.4)
  m[f"cw_K{config.cw_ks[-1]}_ci_risk"] = 0.1
  got = _verdicts(config, m)
  assert not any(got[c] for c in ("crowd_mv", "crowd_ds", "finite_k_flip", "cw_separation"))
