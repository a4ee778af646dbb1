r"""DynaDiff on the KdV-Burgers family with FNO experts (not a registered scale).

    python -m reprojax.experiments.dynadiff.main --config=experiments/dynadiff/configs/pde.py --workdir=/tmp/dynadiff_pde

The paper's own kind of setting: a PDE whose coefficients are the environment
(``u_t + u u_x = nu u_xx - delta u_xxx`` on 64 points, ``(nu, delta)``), experts
``u + FNO(u)`` (the suite's FNO: width 8, 8 modes, 2 Fourier layers; 41 channel nodes),
the prompter over the observed field's three lowest spatial Fourier modes. Smaller zoo
and shorter training than the ODE configs: an FNO expert costs far more per step.
"""

from reprojax.experiments.dynadiff.configs import quick


def get_config():
  c = quick.get_config()
  c.scale = "pde"
  c.families = ("kdv_burgers",)
  c.fno_width = 8  # the experts' FNO
  c.fno_modes = 8
  c.fno_depth = 2
  c.fno_projection = 16
  c.prompt_modes = 3  # spatial Fourier modes the prompter reads (6 real coordinates)
  c.num_zoo_envs = 32
  c.zoo_trajs = 4
  c.traj_steps = 20
  c.base_steps = 600
  c.expert_steps = 300
  c.expert_batch = 16
  c.functional_states = 8
  c.eval_trajs = 2
  c.eval_steps = 20
  c.num_test_envs = 8
  c.coda_steps = 600
  c.coda_batch = 32
  c.curve_steps = 200
  return c
