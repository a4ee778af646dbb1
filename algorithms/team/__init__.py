"""TEAM (ICML 2026): fewer activated experts and more accepted tokens when decoding a
mixture-of-experts diffusion LM (issue 22). Block-diffusion decoding of the suite's small
transformer in its bidirectional MoE mode (``reprojax.models.transformer``), vanilla or with
any of TEAM's three strategies (temporal reuse of decoded tokens' MoE outputs, spatial
expert limiting of far, unconfident masked tokens, speculative exploration of two extra
tokens per pass), with counters and a memory-bound and a compute-bound cost model; the
block-diffusion training loss; a plain-loop reference decoder.

Public API::

    from reprojax.algorithms import team
    batch = team.training_batch(prompt_NxP, prompt_mask_NxP, target_NxG, key, block_len=4,
                                mask_id=MASK)
    model = moe.moe_lm(config)  # reprojax.experiments.team.moe: forward pass and sizes
    loss_N = team.diffusion_loss(model, params, batch)  # per row
    gen_NxG, stats = team.decode(model, params, prompt_NxP, prompt_mask_NxP, gen_len=16,
                                 block_len=4, mask_id=MASK, eos_id=EOS,
                                 strategies=("reuse", "limit", "speculate"))
    modelled = team.cost(model, stats)  # {"bytes", "flops", "passes"}

References:
  Wei et al., TEAM (ICML 2026), public code PKU-SEC-Lab/TEAM-MoE-dLLM (read, not copied);
  Cheng et al., SDAR (2025); Arriola et al., BD3-LM (ICLR 2025).
"""

from reprojax.algorithms.team._core import STRATEGIES
from reprojax.algorithms.team._core import MoeLM
from reprojax.algorithms.team._core import Stats
from reprojax.algorithms.team._core import block_causal
from reprojax.algorithms.team._core import commit_rule
from reprojax.algorithms.team._core import cost
from reprojax.algorithms.team._core import decode
from reprojax.algorithms.team._core import diffusion_loss
from reprojax.algorithms.team._core import limited_top_k
from reprojax.algorithms.team._core import prompt_positions
from reprojax.algorithms.team._core import reference_decode
from reprojax.algorithms.team._core import training_batch

__all__ = ("STRATEGIES", "MoeLM", "Stats", "block_causal", "commit_rule", "cost",
           "decode", "diffusion_loss", "limited_top_k", "prompt_positions",
           "reference_decode", "training_batch")


def examples():
  """The examples of ``tests/test_common.py`` (a tuple of ``Example``), built on call."""
  from reprojax.algorithms.team import _examples  # pylint: disable=g-import-not-at-top
  return _examples.EXAMPLES
