r"""PDR with a better-trained decoder (a sensitivity run, not in `make reproduce`).

    python -m reprojax.experiments.pdr.main --config=experiments/pdr/configs/trained.py --workdir=results/pdr/trained

Hardware and time: 2 CPU cores, about 3 minutes. The quick config with the decoder trained
for 2,000 steps instead of 500 (one-shot sampled accuracy about 0.87 against 0.27): does
refinement help a model that sorts well?
"""

from reprojax.experiments.pdr.configs import quick


def get_config():
  c = quick.get_config()
  c.train_steps = 2000
  c.checkpoint_every = 1000
  return c
