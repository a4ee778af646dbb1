r"""del-NO at quick scale (part of `make reproduce`): Burgers, KdV and Darcy x FNO, DeepONet x clean/noisy.

    python -m reprojax.experiments.del_no.main --config=experiments/del_no/configs/quick.py --workdir=/tmp/del_no

Hardware and time: 2 CPU cores, about 1.5 minutes (91 s in `make reproduce`, alone; a first run
also generates the small datasets, about 10 s more). Reproduces, at reduced scale (1-D grid 64
and Darcy 16 x 16, 256 train pairs, 3 seeds, 200 steps; FNO of depth 2 and DeepONet), the
paper's main table (wins per cell), its learned orders vs the PDE order, the noise, sample-size
and spectral-content sweeps, the x/y agreement of 2-D orders and the per-step overhead (see
experiments/del_no/README.md).
"""

import ml_collections


def get_config() -> ml_collections.ConfigDict:
  c = ml_collections.ConfigDict()
  c.scale = "quick"  # "quick" (make reproduce) or "full"
  c.seed = 0  # first training seed; seeds are seed .. seed + num_seeds - 1
  c.data_seed = 0  # seed of the generated input fields
  c.mesh = ml_collections.ConfigDict({"data": -1})  # axis name -> size (-1: the rest)
  c.generate_data = True  # build missing datasets (False: fail if not cached)
  c.data_dir = ""  # tfds data_dir ("" -> $REPROJAX_DATA_DIR or ~/.cache/reprojax/tfds)
  c.pdes = ("burgers", "kdv", "darcy")  # PDEs of the grid (advection, heat, burgers, kdv; darcy: 2-D)
  c.backbone_names = ("fno", "deeponet")  # backbones of the grid (the U-Net is slow on CPU: full only)
  c.resolution = 64  # grid points of the data
  c.solver_resolution = 256  # grid of the solves (subsampled to resolution)
  c.n_train = 256  # training pairs
  c.n_test = 64  # test pairs
  c.num_seeds = 3  # seeds per cell (vmapped)
  c.noise_sigma = 0.1  # relative input noise level of the noisy regime
  # "ours": noise on train and test inputs, scaled per sample; "authors": their notebooks'
  # protocol, training inputs only, one global std, test inputs clean
  c.noise_protocol = "ours"
  c.steps = 200  # optimizer steps per run
  c.batch_size = 32  # minibatch per replica
  c.learning_rate = 3e-3  # peak Adam(W) rate of the network (cosine decay to 0)
  c.order_lr_multiplier = 10.0  # orders' rate / network's rate (the paper's 10x)
  c.weight_decay = 1e-4  # decoupled weight decay of the network
  c.gl_terms = 16  # K_GL, taps of the Grunwald-Letnikov stencil
  c.standardize_features = False  # True: s_k start at 1 / RMS of their channel (much worse: amplifies noise)
  c.channel_norm = "none"  # "none": channels s_k D^beta u, s_k = 1; "rms": x fixed 1/RMS (ablation.py)
  c.darcy = ml_collections.ConfigDict(dict(  # the 2-D Darcy cells (grid s x s)
      resolution=16,  # grid points per side of the data (2-D steps cost ~ s^2: 16 fits the CPU budget)
      solver_resolution=61,  # grid of the finite-difference solve (resolution - 1 divides its - 1)
      n_train=256,  # training pairs
      n_test=64,  # test pairs
      batch_size=8,  # minibatch per replica
      backbone_names=("fno", "deeponet"),  # backbones of the Darcy cells
  ))
  c.backbones = ml_collections.ConfigDict(dict(
      fno_modes=12,  # FNO Fourier modes
      fno_width=24,  # FNO channels
      fno_depth=2,  # FNO Fourier layers
      fno_modes_2d=6,  # FNO Fourier modes per axis (Darcy)
      fno_padding_2d=2,  # FNO zero padding per axis (Darcy is not periodic)
      unet_width=12,  # U-Net channels at the finest level
      unet_levels=2,  # U-Net down/up-sampling stages
      deeponet_width=128,  # DeepONet branch/trunk hidden width
      deeponet_basis=64,  # DeepONet number of basis functions
  ))
  c.sweep_pde = "burgers"  # PDE of the sweeps
  c.sweep_backbone = "fno"  # backbone of the sweeps
  c.sweep_num_seeds = 3  # seeds per sweep point (vmapped)
  c.sweep_sigma = 0.05  # noise level during the n sweep
  c.sweep_sigmas = (0.0, 0.05, 0.1, 0.2, 0.3)  # noise sweep values
  c.sweep_ns = (32, 64, 128, 192, 256)  # training-set-size sweep values (<= n_train)
  c.sweep_alphas = (3.0, 2.5, 2.0, 1.75, 1.5)  # input spectral-decay sweep values (GRF alpha; law: 2)
  c.sweep_min_levels = 5  # a monotone-trend claim needs at least this many levels
  c.sweep_p_value = 0.05  # ... and a one-sided permutation p-value of the replicas' Spearman below this
  return c
