"""Where data lives: a cache for generated data and a manual folder for real data.

* Generated data (PDE solutions, synthetic graphs) is built once by tfds builders
  and cached under :func:`generated_dir`: ``$REPROJAX_DATA_DIR`` if set, else
  ``~/.cache/reprojax/tfds``.
* Real data that cannot be downloaded at run time is read from a manual folder:
  an explicit ``manual_dir`` argument or flag, else ``$REPROJAX_MANUAL_DIR``.
  ``.ci/run`` points it at ``../shared/data``. The product never hard-codes that path.
"""

from __future__ import annotations

import os

DATA_DIR_ENV = "REPROJAX_DATA_DIR"
MANUAL_DIR_ENV = "REPROJAX_MANUAL_DIR"


def generated_dir(data_dir: str | None = None) -> str:
  """The tfds ``data_dir`` for generated datasets."""
  return os.path.expanduser(data_dir or os.environ.get(DATA_DIR_ENV)
                            or os.path.join("~", ".cache", "reprojax", "tfds"))


def manual_dir(name: str, manual_dir: str | None = None, *, required: tuple[str, ...] = (),
               how_to_get: str = "") -> str:
  """The folder of real dataset ``name``; raises ``FileNotFoundError`` saying how to get it.

  Args:
    name: sub-folder of the manual root, e.g. ``"crowd_binary/jn_product"``.
    manual_dir: explicit folder of this dataset (wins over the environment).
    required: files that must exist inside it.
    how_to_get: where to obtain the files, appended to the error message.
  """
  if manual_dir is None:
    root = os.environ.get(MANUAL_DIR_ENV)
    if not root:
      raise FileNotFoundError(
          f"dataset {name!r} is read from a manual folder: pass its folder explicitly or set "
          f"${MANUAL_DIR_ENV} to the folder that holds {name}/. {how_to_get}".strip())
    manual_dir = os.path.join(root, name)
  manual_dir = os.path.expanduser(manual_dir)
  missing = [f for f in required if not os.path.isfile(os.path.join(manual_dir, f))]
  if not os.path.isdir(manual_dir) or missing:
    what = ", ".join(missing) if os.path.isdir(manual_dir) else "the folder"
    raise FileNotFoundError(
        f"dataset {name!r}: {what} not found in {manual_dir}. {how_to_get}".strip())
  return manual_dir
