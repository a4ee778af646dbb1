"""Runs the released CausalDPO trainer's functions on small batches and writes what they
compute to ``public_code_fixture.json`` (beside this file), the evidence behind the
README's "What the released trainer computes".

The authors' code (github user683/CausalDPO, ``trainer/causal_dpo_trainer.py``) is not
copied here: this script imports it from a checkout given by ``--repo`` and calls its
methods unbound, with a small stand-in for the trainer's ``self`` (the attributes each
method reads) and a tiny randomly initialised LLaMA from transformers (no weights are
downloaded). torch, transformers and scikit-learn are not dependencies of the suite: run
it in a throwaway virtual environment; the JSON it writes is committed and read by
``tests/experiments/test_causal_dpo_experiment.py``::

  python3 -m venv /tmp/cdpo_refvenv
  /tmp/cdpo_refvenv/bin/pip install torch==2.13.0 transformers scikit-learn numpy
  /tmp/cdpo_refvenv/bin/python experiments/causal_dpo/public_code_fixture.py \\
      --repo=/path/to/CausalDPO

(The committed fixture: commit 111a72c of the authors' repository, torch 2.13.0+cpu,
transformers 5.25.0; the versions and the commit are stored in it.)

What it records (every number from running the released methods; CPU, float32):

* ``group_by_env``: the shape its per-environment weights broadcast to, and over many
  random batches (LLaMA-3's vocabulary range, random soft memberships), the largest
  difference between each environment's "pseudo-example" and the input batch, and how
  many token ids its float round trip and ``.long()`` cast changed.
* ``dpo_loss`` with the one rejected response per row that ``causal_dpo.py`` builds:
  the inputs and the released per-example losses, to compare with our ``dpo_loss``.
* ``compute_mmd`` on the two environments' outputs when they are equal (as the trainer
  produces them) and, as a control, on two different sets.
* ``extract_causal_features``: the spread over a batch of the position-0 features when
  the prompts share their first token (every prompt from one template does) and when
  they do not (a control).
* ``compute_loss`` end to end on the tiny LLaMA in eval mode (no dropout): the total
  loss, the pairwise DPO loss of the same batch computed once, and the MMD term.
* the trainer's constructor defaults and the keywords ``causal_dpo.py`` passes it.
"""

from __future__ import annotations

import argparse
import copy
import inspect
import json
import os
import re
import subprocess
import sys
import types

import numpy as np


def _stub(**kw):
  return types.SimpleNamespace(accelerator=types.SimpleNamespace(device="cpu",
                                                                 is_main_process=False), **kw)


def main() -> None:
  ap = argparse.ArgumentParser()
  ap.add_argument("--repo", required=True, help="a checkout of user683/CausalDPO")
  ap.add_argument("--commit", default="", help="the checkout's commit, if not a git work tree")
  ap.add_argument("--out", default=os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                                "public_code_fixture.json"))
  args = ap.parse_args()
  sys.path.insert(0, args.repo)
  import torch
  import transformers
  from trainer.causal_dpo_trainer import DPOTrainer  # the released trainer, unmodified

  torch.manual_seed(0)
  rng = np.random.default_rng(0)
  out: dict = {"torch": torch.__version__, "transformers": transformers.__version__}
  try:
    out["repo_commit"] = args.commit or subprocess.run(
        ["git", "-C", args.repo, "rev-parse", "HEAD"], capture_output=True,
        text=True).stdout.strip()
  except OSError:
    out["repo_commit"] = args.commit

  # --- group_by_env: weights (B, 1, 1) times a (B, L) tensor broadcast to (B, B, L).
  b, length, vocab = 16, 64, 128_256
  self_ = _stub(num_clusters=2)
  w_b11 = torch.ones(b, 1, 1)
  out["group_by_env_broadcast_shape"] = list((torch.ones(b, length) * w_b11).shape)
  worst, changed, total = 0.0, 0, 0
  worst_mask, mask_off, mask_total = 0.0, 0, 0
  for _ in range(200):
    ids = torch.from_numpy(rng.integers(0, vocab, (b, length))).long()
    mask = torch.from_numpy((rng.random((b, length)) < 0.9).astype(np.int64))
    probs = torch.from_numpy(rng.dirichlet(np.ones(2), b).astype(np.float32))
    batch = {"chosen_input_ids": ids, "chosen_attention_mask": mask, "prompt": ["x"] * b}
    envs = DPOTrainer.group_by_env(self_, batch, probs)
    for e in envs.values():
      diff = (e["chosen_input_ids"] - ids).abs()
      worst = max(worst, float(diff.max()))
      changed += int((diff != 0).sum())
      total += diff.numel()
      worst_mask = max(worst_mask, float((e["chosen_attention_mask"] - mask).abs().max()))
      # concatenated_forward keeps a position where the mask == 1
      mask_off += int(((e["chosen_attention_mask"] == 1) != (mask == 1)).sum())
      mask_total += mask.numel()
      assert e["chosen_input_ids"].shape == ids.shape and "prompt" not in e
  out["group_by_env"] = {"batches": 200, "batch": b, "length": length, "vocab": vocab,
                         "max_abs_id_change": worst, "ids_changed": changed,
                         "ids_total": total, "max_abs_mask_change": worst_mask,
                         "mask_entries_flipped": mask_off, "mask_total": mask_total}

  # --- dpo_loss with one rejected response per row (causal_dpo.py: neg_num=1).
  n = 64
  logps = {k: rng.normal(-20.0, 6.0, n).astype(np.float32) for k in ("pc", "pr", "rc", "rr")}
  t = {k: torch.from_numpy(v) for k, v in logps.items()}
  losses, _, _ = DPOTrainer.dpo_loss(_stub(beta=0.1), t["pc"], {"rejected1": t["pr"]},
                                     t["rc"], {"rejected1": t["rr"]})
  out["dpo_loss"] = {"beta": 0.1, **{k: v.tolist() for k, v in logps.items()},
                     "losses": losses.tolist()}

  # --- compute_mmd: two equal sets (what the trainer passes) and two different ones.
  x = torch.randn(b, 8)
  mmd_self = _stub(model=types.SimpleNamespace(device="cpu"))
  out["mmd_equal_sets"] = float(DPOTrainer.compute_mmd(mmd_self, {0: x, 1: x.clone()}))
  out["mmd_different_sets"] = float(DPOTrainer.compute_mmd(mmd_self, {0: x, 1: x + 1.0}))

  # --- position-0 features on a tiny causal LLaMA (random weights, eval mode).
  cfg = transformers.LlamaConfig(vocab_size=512, hidden_size=32, intermediate_size=64,
                                 num_hidden_layers=2, num_attention_heads=4,
                                 num_key_value_heads=4, max_position_embeddings=128)
  model = transformers.LlamaForCausalLM(cfg).eval()
  extractor = torch.nn.Linear(32, 32)
  seqs = torch.from_numpy(rng.integers(1, 512, (b, 24))).long()
  same_first = seqs.clone()
  same_first[:, 0] = 7  # one template: every prompt starts with the same token
  feat_self = _stub(model=model, causal_feature_extractor=extractor)

  def spread(ids):
    with torch.no_grad():
      f = DPOTrainer.extract_causal_features(
          feat_self, {"chosen_input_ids": ids, "chosen_attention_mask": torch.ones_like(ids)})
    return float((f - f[:1]).abs().max())

  out["position0_feature_spread_same_first_token"] = spread(same_first)
  out["position0_feature_spread_different_first_tokens"] = spread(seqs)

  # --- compute_loss end to end, eval mode: two environment passes and the MMD term.
  prompt_len, resp_len = 12, 4
  def row(first):
    p = torch.from_numpy(rng.integers(1, 512, prompt_len)).long()
    p[0] = first
    r = torch.from_numpy(rng.integers(1, 512, resp_len)).long()
    return p, r
  chosen, rejected, labels_c, labels_r = [], [], [], []
  for _ in range(b):
    p, rc = row(7)
    _, rr = row(7)
    chosen.append(torch.cat([p, rc]))
    rejected.append(torch.cat([p, rr]))
    labels_c.append(torch.cat([torch.full((prompt_len,), -100), rc]))
    labels_r.append(torch.cat([torch.full((prompt_len,), -100), rr]))
  batch = {"chosen_input_ids": torch.stack(chosen), "rejected_input_ids": torch.stack(rejected),
           "chosen_attention_mask": torch.ones(b, prompt_len + resp_len, dtype=torch.long),
           "rejected_attention_mask": torch.ones(b, prompt_len + resp_len, dtype=torch.long),
           "chosen_labels": torch.stack(labels_c), "rejected_labels": torch.stack(labels_r)}
  ref = copy.deepcopy(model)
  with torch.no_grad():  # a policy that differs from its reference
    for p in model.parameters():
      p.add_(0.05 * torch.randn_like(p))
  full = _stub(model=model, ref_model=ref, beta=0.1, num_clusters=2, mmd_lambda=0.001,
               mmd_kernel="rbf", mmd_sigma=1.0, eps=0.5, min_samples=10,
               label_pad_token_id=-100, padding_value=0, use_dpo_data_collator=True,
               causal_feature_extractor=extractor,
               cluster_centers=torch.nn.Parameter(torch.randn(2, 32)))
  for name in ("extract_causal_features", "cluster_batch", "group_by_env",
               "concatenated_inputs", "concatenated_forward", "dpo_loss", "_get_batch_logps",
               "compute_mmd"):
    setattr(full, name, types.MethodType(getattr(DPOTrainer, name), full))
  mmd_seen = []
  full.compute_mmd = (lambda f: (lambda outs, **kw: mmd_seen.append(f(outs, **kw))
                                 or mmd_seen[-1]))(full.compute_mmd)
  with torch.no_grad():
    total = float(DPOTrainer.compute_loss(full, model, batch))
    pc, pr, _, _ = full.concatenated_forward(model, batch)
    rc, rr, _, _ = full.concatenated_forward(ref, batch)
    plain = float(full.dpo_loss(pc, pr, rc, rr)[0].mean())
    probs = full.cluster_batch(batch)
  out["compute_loss"] = {"total": total, "plain_pairwise_dpo": plain,
                         "mmd": float(mmd_seen[-1]),
                         "cluster_prob_spread": float((probs - probs[:1]).abs().max())}
  # The same with group_by_env's exact value (each environment gets the batch itself,
  # what its weighted sum is in exact arithmetic): the rounding is then the only difference.
  full.group_by_env = lambda batch_, probs_: {e: dict(batch_) for e in range(2)}
  with torch.no_grad():
    total_exact = float(DPOTrainer.compute_loss(full, model, batch))
  out["compute_loss"].update({"total_exact_grouping": total_exact,
                              "mmd_exact_grouping": float(mmd_seen[-1])})

  # --- _get_batch_logps: which positions it sums (labels -100 on the prompt). On uniform
  # logits every counted position adds -log V, so the count is -logp / log V.
  labels = torch.full((1, 16), -100)
  labels[0, 12:] = 5  # a 12-token prompt, a 4-token response
  lp = DPOTrainer._get_batch_logps(_stub(label_pad_token_id=-100), torch.zeros(1, 16, 512),
                                   labels)
  out["batch_logps_positions_counted"] = {"response_positions": 4, "sequence_positions": 15,
                                          "counted": float(-lp[0] / np.log(512))}

  # --- the trainer's defaults and what causal_dpo.py passes it.
  sig = inspect.signature(DPOTrainer.__init__).parameters
  out["trainer_defaults"] = {k: sig[k].default for k in
                             ("beta", "max_length", "max_prompt_length", "num_clusters",
                              "mmd_lambda", "mmd_sigma", "eps", "min_samples")}
  with open(os.path.join(args.repo, "causal_dpo.py")) as f:
    src = f.read()
  call = re.search(r"DPOTrainer\((.*?)\n\s*\)", src, re.S).group(1)
  out["causal_dpo_py_trainer_keywords"] = re.findall(r"(\w+)\s*=", call)
  with open(args.out, "w") as f:
    json.dump(out, f, indent=1)
    f.write("\n")
  print(json.dumps({k: v for k, v in out.items() if k != "dpo_loss"}, indent=1))


if __name__ == "__main__":
  main()
