r"""CALM at quick scale with the teacher's two differences apart (not a registered scale).

    python -m reprojax.experiments.calm.main --config=experiments/calm/configs/styles.py --workdir=/tmp/calm_styles

Hardware and time: 2 CPU cores, about 100 s. The quick run plus direct SFT on the gold
solutions without the base model's line labels (its order kept: ``direct_unlabelled``) and
with the labels but the ``bin`` line last (``direct_reordered``): which of the two makes
direct SFT collapse.
"""

from reprojax.experiments.calm.configs import quick


def get_config():
  c = quick.get_config()
  c.scale = "styles"
  c.extra_styles = ("unlabelled", "reordered")
  return c
