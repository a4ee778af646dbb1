"""LLM4PH's benchmark run: every task at every size in both encodings, the exact engine
checked against gudhi on every instance, the baselines and a real small language model
(SmolLM2-135M-Instruct in JAX) scored, the difficulty ordering measured.

The run:

1. generates ``num_instances`` instances of each task at each size (seeds from
   ``config.seed``) and ``num_instances`` more, from another seed range, as the majority
   baseline's reference;
2. checks the engine: every instance's graph (with its own filtration; the design and
   real-graph tasks' graphs under the degree filtration) gives gudhi's H0 and H1
   diagrams (positive points), and the batched JAX H0 of every graph at once, padded and
   split over the mesh (:func:`main_step`'s program), equals the host's exactly;
3. scores the oracle, 1-skeleton, random and majority baselines on every instance in
   both encodings, and the language model (``config.lm``) on the first
   ``lm_num_instances`` of each task at ``lm_sizes`` in ``lm_encodings``, writing every
   output of the language model to ``<workdir>/outputs_<lm>.jsonl``, and the accuracy
   of every model per task, size and encoding to ``<workdir>/accuracy.md``.

Per model ``m`` the metrics are ``m_<task>_<size>_<encoding>_acc``, ``m_<task>_acc``,
``m_level_<level>_acc`` (with ``_se``), ``m_enc_<encoding>_acc``, ``m_parsed`` (an answer
was read), ``m_marked`` (the reply gave the ``Answer:`` line asked for) and the
ordering ``m_structure_acc``, ``m_transition_acc`` (filtration and persistence levels
pooled), ``m_ordering_gap`` (structure minus transition) with ``_se``.
"""

from __future__ import annotations

import json
import os
import time

import jax
import jax.numpy as jnp
import ml_collections
import numpy as np

from reprojax.algorithms import llm4ph
from reprojax.experiments import sharding
from reprojax.experiments.llm4ph import plots
from reprojax.experiments.llm4ph import programs

_POS = (0.5, float("inf"))
CONFIG_RANGES = {"num_instances": _POS, "lm_num_instances": (-0.5, float("inf")),
                 "lm_max_new_tokens": _POS, "lm_batch_size": _POS}


def _check_config(config) -> None:
  for name in ("sizes", "lm_sizes"):
    bad = [s for s in config[name] if s not in llm4ph.SIZES]
    if bad:
      raise ValueError(f"config.{name} must name sizes in {tuple(llm4ph.SIZES)}, got {bad}")
  for name in ("encodings", "lm_encodings"):
    bad = [e for e in config[name] if e not in llm4ph.ENCODINGS]
    if bad:
      raise ValueError(f"config.{name} must name encodings in {llm4ph.ENCODINGS}, got {bad}")
  bad = [t for t in config.tasks if t not in llm4ph.TASKS]
  if bad:
    raise ValueError(f"config.tasks must name tasks in {llm4ph.TASKS}, got {bad}")
  if config.lm not in ("", "smollm2"):
    raise ValueError(f"config.lm must be '' (none) or 'smollm2', got {config.lm!r}")


def _summarise(metrics, name, records) -> None:
  by = llm4ph.accuracy_table(records, by=("task", "size", "encoding"))
  for (task, size, enc), v in by.items():
    metrics[f"{name}_{task}_{size}_{enc}_acc"] = v["accuracy"]
  for (task,), v in llm4ph.accuracy_table(records, by=("task",)).items():
    metrics[f"{name}_{task}_acc"] = v["accuracy"]
  for (level,), v in llm4ph.accuracy_table(records, by=("level",)).items():
    metrics[f"{name}_level_{level}_acc"] = v["accuracy"]
    metrics[f"{name}_level_{level}_se"] = v["stderr"]
  for (enc,), v in llm4ph.accuracy_table(records, by=("encoding",)).items():
    metrics[f"{name}_enc_{enc}_acc"] = v["accuracy"]
  metrics[f"{name}_parsed"] = float(np.mean([r.parsed for r in records]))
  metrics[f"{name}_marked"] = float(np.mean([r.marked for r in records]))
  metrics[f"{name}_n"] = len(records)
  acc = float(np.mean([r.correct for r in records]))
  metrics[f"{name}_acc"] = acc
  metrics[f"{name}_acc_se"] = float(np.sqrt(acc * (1 - acc) / len(records)))
  pairs = [r.distance for r in records if r.task in ("h0_pairs", "h1_pairs")]
  if pairs:
    finite = [d for d in pairs if np.isfinite(d)]
    metrics[f"{name}_pairs_readable"] = len(finite) / len(pairs)
    if finite:  # mean bottleneck distance of the readable pair answers to the truth
      metrics[f"{name}_pairs_bottleneck"] = float(np.mean(finite))
  struct = [r.correct for r in records if llm4ph.LEVEL_OF[r.task] == "structure"]
  trans = [r.correct for r in records if llm4ph.LEVEL_OF[r.task] in programs.TRANSITION_LEVELS]
  if struct and trans:
    a, b = float(np.mean(struct)), float(np.mean(trans))
    se = np.sqrt(a * (1 - a) / len(struct) + b * (1 - b) / len(trans))
    metrics[f"{name}_structure_acc"], metrics[f"{name}_transition_acc"] = a, b
    metrics[f"{name}_ordering_gap"], metrics[f"{name}_ordering_gap_se"] = a - b, float(se)


def accuracy_markdown(config, metrics) -> str:
  """Per-task accuracy of every model, a column per size and encoding (``accuracy.md``)."""
  names = [n for n in programs.BASELINES + ("lm",) if f"{n}_parsed" in metrics]
  cols = [(s, e) for s in config.sizes for e in config.encodings]
  out = []
  for name in names:
    out += [f"### {name}", "", "| task | level | " + " | ".join(f"{s}, {e.replace('_', ' ')}"
                                                          for s, e in cols) + " |",
            "|---|---|" + "---|" * len(cols)]
    for task in config.tasks:
      cells = [metrics.get(f"{name}_{task}_{s}_{e}_acc") for s, e in cols]
      out.append(f"| {task} | {llm4ph.LEVEL_OF[task]} | " + " | ".join(
          "-" if c is None else f"{c:.2f}" for c in cells) + " |")
    out.append("")
  return "\n".join(out)


def run(config: ml_collections.ConfigDict, workdir: str) -> dict[str, float]:
  """The benchmark run of the module docstring; returns the metrics."""
  _check_config(config)
  mesh = sharding.config_mesh(config)
  metrics: dict[str, float] = {}
  t0 = time.perf_counter()
  insts, ref = programs.instances(config), programs.instances(config, reference=True)
  metrics["num_instances"] = len(insts)
  metrics["time_generate_s"] = time.perf_counter() - t0
  graphs = programs.checked_graphs(insts)
  metrics["engine_graphs"] = len(graphs)
  metrics["engine_h0_jax_mismatches"] = programs.h0_mismatches(mesh, graphs)
  if config.check_gudhi:
    t0 = time.perf_counter()
    metrics["engine_gudhi_mismatches"] = programs.gudhi_mismatches(graphs)
    metrics["time_gudhi_check_s"] = time.perf_counter() - t0
  models = {"oracle": llm4ph.oracle_model(), "skeleton": llm4ph.skeleton_model(),
            "random": llm4ph.random_model(int(config.seed)),
            "majority": llm4ph.majority_model(ref)}
  for name, model in models.items():
    t0 = time.perf_counter()
    records = llm4ph.evaluate(model, insts, tuple(config.encodings))
    _summarise(metrics, name, records)
    if name == "oracle":
      engine = [r.correct for r in records if r.task != "real_graph_classification"]
      metrics["oracle_engine_tasks_acc"] = float(np.mean(engine))
      metrics["oracle_engine_tasks_n"] = len(engine)
    metrics[f"time_{name}_s"] = time.perf_counter() - t0
  lm = programs.language_model(config)
  if lm is not None and int(config.lm_num_instances) > 0:
    k = int(config.lm_num_instances)
    chosen = [i for i in insts if i.size in config.lm_sizes and
              i.seed - int(config.seed) * 100_000 < k]
    t0 = time.perf_counter()
    records = llm4ph.evaluate(lm, chosen, tuple(config.lm_encodings),
                              batch_size=int(config.lm_batch_size))
    metrics["time_lm_s"] = time.perf_counter() - t0
    _summarise(metrics, "lm", records)
    # the baselines on exactly the language model's prompts, for a like-for-like chance line
    for name in ("random", "majority", "skeleton"):
      _summarise(metrics, f"{name}_on_lm", llm4ph.evaluate(models[name], chosen,
                                                            tuple(config.lm_encodings)))
    if jax.process_index() == 0:
      os.makedirs(workdir, exist_ok=True)
      with open(os.path.join(workdir, f"outputs_{config.lm}.jsonl"), "w") as f:
        for r in records:
          f.write(json.dumps(r._asdict(), default=float) + "\n")
  if jax.process_index() == 0:
    os.makedirs(workdir, exist_ok=True)
    with open(os.path.join(workdir, "accuracy.md"), "w") as f:
      f.write(accuracy_markdown(config, metrics))
  plots.plot_tasks(workdir, config, metrics)
  plots.plot_levels(workdir, config, metrics)
  return metrics


def main_step(config: ml_collections.ConfigDict, key: jax.Array | None) -> sharding.Step:
  """The engine's batched H0 over every generated graph at ``config``'s shapes, split over
  the mesh's ``data`` axis (the jittable part of the engine; H1's reduction stays on
  the host). With a key: random filtered graphs of the largest size (up to 20 vertices,
  64 edge slots); with None: ``jax.ShapeDtypeStruct`` args for every graph of the run."""
  n_graphs = len(config.tasks) * len(config.sizes) * int(config.num_instances) + (
      int(config.num_instances) * len(config.sizes) if "filtration_design" in config.tasks
      else 0)
  v = max(llm4ph.SIZES[s][1] for s in config.sizes)
  e = 64
  if key is None:
    args = (jax.ShapeDtypeStruct((n_graphs, e, 2), jnp.int32),
            jax.ShapeDtypeStruct((n_graphs, e), jnp.float32),
            jax.ShapeDtypeStruct((n_graphs, v), jnp.float32))
  else:
    n_graphs = min(n_graphs, 24)
    ke, kv, kt = jax.random.split(key, 3)
    edges = np.asarray(jax.random.randint(ke, (n_graphs, e, 2), 0, v), np.int32)
    vv = np.asarray(jax.random.uniform(kv, (n_graphs, v)), np.float32)
    ends = np.maximum(np.take_along_axis(vv, edges[..., 0], 1),
                      np.take_along_axis(vv, edges[..., 1], 1))
    ev = ends + np.asarray(jax.random.uniform(kt, (n_graphs, e)), np.float32)
    args = (edges, ev, vv)
  return sharding.Step(programs.h0_program, args)
