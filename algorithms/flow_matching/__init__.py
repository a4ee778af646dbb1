"""Flow matching: the shared training loss and sampler of the suite's generative models.

Not a paper of its own: the conditional image generator of ``models/cond_unet.py``
trains with :func:`flow_matching_loss` and samples with :func:`euler_sample` and
:func:`guided_velocity` (OCE uses it; flash_grpo, vrpo and distseal may).

Public API::

    from reprojax.algorithms import flow_matching as fm
    loss_B = fm.flow_matching_loss(lambda x, t: net(params, x, t), x1_BxD, key)
    x1 = fm.euler_sample(lambda x, t: net(params, x, t), noise_BxD, num_steps=20)
    # or the network predicts the data (x1) and the sampler integrates its velocity:
    loss_B = fm.x1_prediction_loss(lambda x, t: net(params, x, t), x1_BxD, key)
    v = fm.velocity_from_x1(net(params, x, t), x, t)
"""

from reprojax.algorithms.flow_matching._flow import euler_sample
from reprojax.algorithms.flow_matching._flow import flow_matching_loss
from reprojax.algorithms.flow_matching._flow import guided_velocity
from reprojax.algorithms.flow_matching._flow import interpolate
from reprojax.algorithms.flow_matching._flow import velocity_from_x1
from reprojax.algorithms.flow_matching._flow import x1_prediction_loss

__all__ = ("euler_sample", "flow_matching_loss", "guided_velocity", "interpolate",
           "velocity_from_x1", "x1_prediction_loss")


def examples():
  """The examples of ``tests/test_common.py`` (a tuple of ``Example``), built on call."""
  from reprojax.algorithms.flow_matching import _examples  # pylint: disable=g-import-not-at-top
  return _examples.EXAMPLES
