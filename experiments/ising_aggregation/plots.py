"""The ising_aggregation experiment's figures (all of them; called from ``experiment.run``).

* ``accuracy.png``: accuracy of every aggregator (and the Bayes oracle) against K in
  regime A (clique), against the number of items at the largest K, against K on the
  semi-real digits judges, and against K in regime B (bloc);
* ``curie_weiss_risk.png``: exact risks of the CI rule (exact marginals) and of the Bayes
  rule on the Curie-Weiss panel as K grows.
"""

from __future__ import annotations

from reprojax.experiments import plotting


def write_all(workdir, config, synth, semi, cw, bloc,
              methods=("mv", "ci_weighted", "ising_indep", "ising_dep", "ising_dep_10pct")):
  """Writes both figures into ``workdir`` (process 0 only).

  Args:
    workdir: output folder.
    config: the run's config.
    synth: ``{(K, items): [trial, method + bayes, (acc, log loss, ece)]}`` of regime A.
    semi: ``{K: [trial, method, metric]}`` of the semi-real judges.
    cw: ``[(K, Bayes risk, CI risk, a, b), ...]`` of the Curie-Weiss panels.
    bloc: ``{(K, items): [trial, method + bayes, metric]}`` of regime B.
    methods: the aggregators' names, in the order of the method axis.
  """
  methods = tuple(methods)
  labels = {"mv": "uniform MV", "ci_weighted": "CI weighted (DS)", "ising_indep": "class-indep. Ising",
            "ising_dep": "class-dep. Ising", "ising_dep_10pct": "class-dep. Ising, 10% labels",
            "bayes": "Bayes oracle"}
  fig, axes = plotting.subplots(1, 4, figsize=(20, 4))
  ks = list(config.synth_ks)
  n = config.synth_items
  for i, meth in enumerate(methods + ("bayes",)):
    axes[0].plot(ks, [synth[(k, n)][:, i, 0].mean() for k in ks], "o-", label=labels[meth])
  axes[0].set(xlabel="judges K", ylabel="accuracy", title=f"simulated dependent panels, {n} items")
  kk = config.synth_ks[-1]
  ns = sorted({nn for (k, nn) in synth if k == kk})
  for i, meth in enumerate(methods + ("bayes",)):
    axes[1].plot(ns, [synth[(kk, nn)][:, i, 0].mean() for nn in ns], "o-", label=labels[meth])
  axes[1].set(xscale="log", xlabel="items", ylabel="accuracy", title=f"simulated, K={kk}")
  sk = list(config.semi_ks)
  for i, meth in enumerate(methods):
    axes[2].plot(sk, [semi[k][:, i, 0].mean() for k in sk], "o-", label=labels[meth])
  axes[2].set(xlabel="judges K", ylabel="accuracy", title="semi-real judges (digits classifiers)")
  bk = list(config.bloc_ks)
  for i, meth in enumerate(methods + ("bayes",)):
    axes[3].plot(bk, [bloc[(k, n)][:, i, 0].mean() for k in bk], "o-", label=labels[meth])
  axes[3].set(xlabel="judges K", ylabel="accuracy", title=f"bloc regime (B), {n} items")
  axes[0].set_title(f"clique regime (A), {n} items")
  axes[0].legend(fontsize=7)
  fig.tight_layout()
  plotting.save(fig, workdir, "accuracy.png", dpi=110)

  fig, ax = plotting.subplots(figsize=(5.5, 4))
  ax.plot([c[0] for c in cw], [c[2] for c in cw], "o-", label="CI rule (exact marginals)")
  ax.plot([c[0] for c in cw], [max(c[1], 1e-300) for c in cw], "s-", label="Bayes (Ising)")
  ax.set(xscale="log", yscale="log", xlabel="judges K", ylabel="risk",
         title="Curie-Weiss separation", ylim=(1e-12, 1))
  ax.legend()
  fig.tight_layout()
  plotting.save(fig, workdir, "curie_weiss_risk.png", dpi=110)
