"""The FNO experiment's figure: one test example against the truth, and the training curve."""

from __future__ import annotations

from typing import Sequence

import ml_collections
import numpy as np

from reprojax.data import pde
from reprojax.experiments import plotting


def prediction_and_curve(workdir: str, name: str, rc: ml_collections.ConfigDict, data: pde.Split,
                 pred: np.ndarray, err: float, curve: Sequence[dict]) -> None:
  """Writes ``fno_<name>.png``: the first test pair with the FNO's prediction, and the loss.

  Args:
    workdir: folder of the figure.
    name: the run's name in ``config.runs``.
    rc: the run's config (``pde``, ``resolution``, ``n_train``, the paper's figure).
    data: the run's dataset; its first test pair is drawn.
    pred: the FNO's prediction of ``data.y_test[0]``.
    err: the mean test relative L2 error.
    curve: the training metrics (``step``, ``loss``) as ``metrics.jsonl`` holds them.
  """
  if rc.pde == "burgers":
    fig, axes = plotting.subplots(1, 2, figsize=(10, 3.5))
    x = np.arange(rc.resolution) / rc.resolution
    axes[0].plot(x, data.x_test[0], label="u(x, 0) (input)", alpha=0.6)
    axes[0].plot(x, data.y_test[0], label="u(x, 1) (truth)")
    axes[0].plot(x, pred, "--", label="FNO")
    axes[0].set_xlabel("x")
    axes[0].legend(fontsize=8)
  else:
    fig, axes = plotting.subplots(1, 4, figsize=(15, 3.5))
    for ax, img, title in zip(axes[:3], (data.x_test[0], data.y_test[0], pred),
                              ("coefficient a", "solution u", "FNO")):
      im = ax.imshow(np.asarray(img).T, origin="lower", extent=(0, 1, 0, 1))  # x right, y up
      ax.set_title(title)
      fig.colorbar(im, ax=ax, fraction=0.046)
  steps = [r["step"] for r in curve]
  axes[-1].semilogy(steps, [r["loss"] for r in curve])
  axes[-1].set_xlabel("step")
  axes[-1].set_ylabel("train relative L2")
  fig.suptitle(f"FNO {name}: s={rc.resolution}, n_train={rc.n_train}, test rel. L2 = {err:.4f} "
               f"(paper {rc.paper_rel_l2:.4f}, {rc.paper_setting})", fontsize=9)
  fig.tight_layout()
  plotting.save(fig, workdir, f"fno_{name}.png", dpi=110)
