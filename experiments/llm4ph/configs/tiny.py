"""LLM4PH at tiny scale: the notebook's test run, not a reproduction.

Seconds on 2 CPU cores: two instances of each task at the small size, no language model.
Its figures and claims are noise.

    python -m reprojax.experiments.llm4ph.main --config=experiments/llm4ph/configs/tiny.py --workdir=/tmp/llm4ph_tiny
"""

from reprojax.experiments.llm4ph.configs import quick


def get_config():
  c = quick.get_config()
  c.scale = "tiny"
  c.sizes = ("small",)
  c.num_instances = 2
  c.lm = ""
  c.lm_num_instances = 0
  return c
