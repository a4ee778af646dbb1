r"""PDR with training consistent with PDR (a sensitivity run, not in `make reproduce`).

    python -m reprojax.experiments.pdr.main --config=experiments/pdr/configs/rl.py --workdir=results/pdr/rl

Hardware and time: 2 CPU cores, about 4 minutes. The quick config, then 150 GRPO steps on
the decoder's own PDR rounds (experiments/pdr/rl.py: 32 questions a step, 4 drafts and 4
refinements each), and every method evaluated before and after on the same questions.
"""

from reprojax.experiments.pdr.configs import quick


def get_config():
  c = quick.get_config()
  c.rl.steps = 150
  return c
