"""The gwcn claims: verdicts computed from hand-made metrics.

The experiment's main sharded step (8 devices == 1) is checked by the every-paper
``tests/experiments/test_papers.py``.
"""

from reprojax.experiments import registry
from reprojax.experiments.gwcn import claims

TAGS = ("const", "n-0.25", "n-0.5", "logn_n", "1_n")


def _config():
  return registry.load_config("gwcn", "quick")


def _metrics(config, sparsest_falls=1, cgcn_err=0.4, cgcn_falls=0):
  """Every metric the claims read, saying that every claim holds (unless told otherwise)."""
  m = {"synthetic/degree_sweep/gwcn_err_slope": -0.5, "synthetic/bound_holds_fraction": 1.0,
       "synthetic/bound_size_nmax/1_n": 4.0, "synthetic/bound_density_nmax/1_n": 15.0,
       "real/degree/density_m_min": 0.004, "real/degree/density_m_max": 0.001,
       "real/degree/density_exponent": -0.4, "real/degree/density_decreasing": 1,
       "real/degree/density_fit_r2/1_n": 0.2, "real/degree/density_fit_r2/logn_n": 0.5,
       "real/degree/density_fit_r2/const": 0.1}
  for t in TAGS:
    falls = sparsest_falls if t == "1_n" else 1
    m.update({f"synthetic/gwcn_err_rate/{t}": 0.3, f"synthetic/gwcn_err_falls/{t}": falls,
              f"synthetic/gwcn_readout_err_rate/{t}": 0.4,
              f"synthetic/gwcn_readout_err_falls/{t}": 1,
              f"synthetic/cgcn_err_rate/{t}": 0.0, f"synthetic/cgcn_err_falls/{t}": cgcn_falls,
              f"synthetic/cgcn_err_nmax/{t}": cgcn_err, f"synthetic/gwcn_err_nmax/{t}": 0.2})
  for i, size in enumerate(sorted(config.cls_sizes)):
    m[f"cls/acc_mean/m{size}"] = 0.5 + 0.1 * i
    m[f"cls/transfer_err_mean/m{size}"] = 1.0 - 0.2 * i
    m[f"cls/acc_std/m{size}"] = 0.03  # spreads over trials (the evidence's margin reads them)
    m[f"cls/transfer_err_std/m{size}"] = 0.1
  return m


def _claims(config, m):
  return {c.id: c for c in claims.claims(config, m)}


def test_claims_hold_on_metrics_that_say_so():
  config = _config()
  got = _claims(config, _metrics(config))
  assert all(c.holds for c in got.values()), {k: c.holds for k, c in got.items()}
  assert "degree ~m^-0.40, R^2 of 1/n 0.20, of log n / n 0.50" in got["degree_core_density_falls"].ours
  assert "bound / error 95x" in got["error_below_bound"].ours  # (4 + 15) / 0.2
  kinds = {k: c.kind for k, c in got.items()}
  assert [k for k, v in kinds.items() if v == "paper"] == [
      "gwcn_decay_every_schedule", "cgcn_stalls_when_sparsest", "cls_improves_with_subgraph"]
  assert "c=2.5..40" in got["gwcn_decay_every_schedule"].ours


def test_claims_fail_on_metrics_that_say_so():
  config = _config()
  got = _claims(config, _metrics(config, sparsest_falls=0, cgcn_err=0.25, cgcn_falls=1))
  assert not got["gwcn_decay_every_schedule"].holds and got["gwcn_decay_when_degree_grows"].holds
  assert not got["cgcn_stalls_when_sparsest"].holds  # c-GCN falls and is not 1.5x worse
  m = _metrics(config)
  m.update({"synthetic/bound_holds_fraction": 0.95, "real/degree/density_decreasing": 0,
            f"cls/acc_mean/m{max(config.cls_sizes)}": 0.4})
  got = _claims(config, m)
  assert not any(got[c].holds for c in ("error_below_bound", "degree_core_density_falls",
                                        "cls_improves_with_subgraph"))
