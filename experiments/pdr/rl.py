"""Training consistent with PDR: GRPO on the decoder's own PDR rounds.

The paper trains its model with RL "to make it consistent with PDR as the inference
method". Our reading, on the sorting decoder: each step draws ``rl.questions`` fresh
training questions and runs one PDR round with the current policy, as inference does:
``width`` sampled drafts per question, their shared top-``k`` workspace (the model's own
scores, never the verifier), then ``width`` sampled refinements of that workspace. The
reward of a draft or a refinement is its exact correctness (the task's verifier, which only
training sees), and both groups, the drafts of a question and its refinements, take one
on-policy GRPO step (:mod:`reprojax.algorithms.policy_gradient`: group-standardised
advantages, a k3 KL penalty to the supervised model). So the policy learns to write drafts
worth distilling and to refine from a distilled workspace.

The state (parameters, Adam moments, step) is an orbax checkpoint every
``rl.checkpoint_every`` steps under ``<workdir>/checkpoints``; step ``t``'s questions and
sampling keys derive from ``(seed, t)``, so a run stopped and resumed ends bit-identical
to one that never stopped, and a rerun restores the trained policy.
"""

from __future__ import annotations

import json
import os
from typing import Any, NamedTuple

from absl import logging
import jax
import jax.numpy as jnp
import numpy as np
import optax
import orbax.checkpoint as ocp

from reprojax.algorithms import pdr
from reprojax.data import pdr as pdr_data
from reprojax.experiments import metrics as metrics_lib
from reprojax.experiments import sharding
from reprojax.experiments import train
from reprojax.models import llama
from reprojax.models import transformer


class RlState(NamedTuple):
  step: jax.Array
  params: Any
  opt_state: Any


def _completions(gen: llama.Generation) -> tuple[np.ndarray, np.ndarray]:
  """The generated tokens and their mask, the stopping eos included (it is an action)."""
  tokens = np.asarray(gen.tokens_BxN)
  n = np.asarray(gen.lengths_B) + np.asarray(gen.stopped_B)
  return tokens, np.arange(tokens.shape[1])[None, :] < n[:, None]


def _sequences(prompts, tokens, done, pad: int):
  ids_p, mask_p = llama.pad_batch([list(p) for p in prompts], pdr_data.PAD, "left", pad)
  return (np.concatenate([ids_p, tokens], 1).astype(np.int32),
          np.concatenate([mask_p, done], 1),
          np.concatenate([np.zeros_like(mask_p), done], 1))


def make_step(cfg: llama.LlamaConfig, optimizer, ref_params, *, beta: float, clip_eps: float):
  """The jitted GRPO update on one round's drafts and refinements."""

  def group_loss(params, ids, mask, acts, rewards):
    return transformer.grpo_loss(cfg, params, ref_params, ids, mask, acts, rewards,
                                 clip_eps=clip_eps, beta=beta)

  def loss(params, drafts, refines):
    l1, a1 = group_loss(params, *drafts)
    l2, a2 = group_loss(params, *refines)
    return l1 + l2, (a1.kl + a2.kl) / 2

  @jax.jit
  def step(state: RlState, drafts, refines):
    (l, kl), grads = jax.value_and_grad(loss, has_aux=True)(state.params, drafts, refines)
    updates, opt_state = optimizer.update(grads, state.opt_state, state.params)
    return RlState(state.step + 1, optax.apply_updates(state.params, updates), opt_state), \
        {"loss": l, "kl": kl, "grad_norm": optax.global_norm(grads)}

  return step


def train_rl(config, sft_params, workdir: str, seed: int, *, cfg: llama.LlamaConfig,
             task: pdr_data.SortingTask, pad: int, stop_after: int | None = None,
             mesh: jax.sharding.Mesh | None = None):
  """The policy after ``config.rl.steps`` GRPO steps from ``sft_params`` (see the module
  docstring), for the decoder ``cfg`` on ``task`` with prompts left-padded to ``pad``
  tokens. Returns ``(params, {"rl_reward_drafts": ..., "rl_reward_refined": ...})``, the
  mean rewards of the last quarter of the steps (:func:`reward_summary`)."""
  rc = config.rl
  width, k, nq = int(config.width), int(config.k), int(rc.questions)
  optimizer = optax.adam(float(rc.learning_rate))
  step_fn = make_step(cfg, optimizer, sft_params, beta=float(rc.beta),
                      clip_eps=float(rc.clip_eps))
  mngr = train.checkpoint_manager(workdir)
  state = RlState(jnp.zeros((), jnp.int32), sft_params, optimizer.init(sft_params))
  if mesh is not None and jax.process_count() > 1:
    # orbax saves global arrays only: on several processes the state is replicated over the
    # mesh (on one, it stays on the default device, where the step has always run it)
    state = sharding.put(jax.device_get(state), sharding.replicated(mesh))
  if mngr.latest_step() is not None:
    state = mngr.restore(mngr.latest_step(), args=ocp.args.StandardRestore(state))
    logging.info("rl: resumed from %s at step %d", mngr.directory, mngr.latest_step())
  total = int(rc.steps)
  last = total if stop_after is None else min(total, stop_after)
  writer = metrics_lib.MetricWriter(workdir)
  rewards_path = os.path.join(workdir, "rewards.jsonl")  # every step's mean rewards
  temperature = float(config.temperature)
  try:
    for t in range(int(state.step), last):
      key = jax.random.fold_in(jax.random.key(seed), t)
      qs = pdr_data.questions(task, nq, 50_000_000 + 1000 * seed + t)
      questions = qs.tokens
      prompts = [pdr_data.prompt(q, ()) for q in questions for _ in range(width)]
      ids, mask = llama.pad_batch([list(p) for p in prompts], pdr_data.PAD, "left", pad)
      gen = llama.generate(cfg, state.params, ids, mask, max_new_tokens=task.draft_tokens,
                           eos_ids=(pdr_data.EOS,), pad_id=pdr_data.PAD,
                           temperature=temperature, key=jax.random.fold_in(key, 0))
      tokens, done = _completions(gen)
      lengths = np.asarray(gen.lengths_B)
      score = np.asarray(gen.logprob_B) / np.maximum(lengths, 1)
      drafts = [pdr.Draft(tuple(int(x) for x in tokens[i, :lengths[i]]), float(score[i]))
                for i in range(len(prompts))]
      r_drafts = np.array([pdr_data.is_correct(d.tokens, qs.answers_QxN[i // width])
                           for i, d in enumerate(drafts)], np.float32).reshape(nq, width)
      ws = [pdr.distill("shared_top_k", drafts[i * width:(i + 1) * width], 1,
                        task.workspace_tokens(k), key, k=k, separator=(pdr_data.SEP,))[0]
            for i in range(nq)]
      prompts2 = [pdr_data.prompt(q, w) for q, w in zip(questions, ws) for _ in range(width)]
      ids2, mask2 = llama.pad_batch([list(p) for p in prompts2], pdr_data.PAD, "left", pad)
      gen2 = llama.generate(cfg, state.params, ids2, mask2, max_new_tokens=task.draft_tokens,
                            eos_ids=(pdr_data.EOS,), pad_id=pdr_data.PAD,
                            temperature=temperature, key=jax.random.fold_in(key, 1))
      tokens2, done2 = _completions(gen2)
      lengths2 = np.asarray(gen2.lengths_B)
      r_refined = np.array([pdr_data.is_correct(tuple(tokens2[i, :lengths2[i]]),
                                                qs.answers_QxN[i // width])
                            for i in range(len(prompts2))], np.float32).reshape(nq, width)
      state, out = step_fn(state, _sequences(prompts, tokens, done, pad) + (r_drafts,),
                           _sequences(prompts2, tokens2, done2, pad) + (r_refined,))
      if jax.process_index() == 0:
        with open(rewards_path, "a") as f:
          f.write(json.dumps({"step": t + 1, "drafts": float(r_drafts.mean()),
                              "refined": float(r_refined.mean())}) + "\n")
      if (t + 1) % 25 == 0 or t + 1 == last:
        host = {k_: float(v) for k_, v in jax.device_get(out).items()}
        if not all(np.isfinite(list(host.values()))):
          raise FloatingPointError(f"rl: non-finite metrics {host} at step {t + 1}")
        writer.write(t + 1, {**host, "reward_drafts": float(r_drafts.mean()),
                             "reward_refined": float(r_refined.mean())})
      if (t + 1) % int(rc.checkpoint_every) == 0 or t + 1 == last:
        mngr.save(t + 1, args=ocp.args.StandardSave(state))
  finally:
    mngr.wait_until_finished()
    mngr.close()
  return jax.device_get(state.params), reward_summary(rewards_path, total)


def reward_summary(path: str, steps: int) -> dict[str, float]:
  """Mean rewards of the drafts and the refinements over the last quarter of the steps
  (a step logged twice, by a run resumed from an earlier checkpoint, counts once)."""
  by_step = {}
  if os.path.exists(path):
    with open(path) as f:
      for line in f:
        row = json.loads(line)
        by_step[row["step"]] = row
  tail = [by_step[t] for t in sorted(by_step) if t > steps - max(1, steps // 4)]
  if not tail:
    return {}
  return {"rl_reward_drafts": float(np.mean([r["drafts"] for r in tail])),
          "rl_reward_refined": float(np.mean([r["refined"] for r in tail]))}
