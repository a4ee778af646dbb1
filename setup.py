"""Installs the four top-level folders under one namespace (shared/STYLE.md, 5).

``algorithms/``, ``models/``, ``data/`` and ``experiments/`` stay at the
repository's top level and install as ``reprojax.algorithms``,
``reprojax.models``, ``reprojax.data`` and ``reprojax.experiments`` (``reprojax``
itself is a namespace package), so a user's own ``data/`` or ``models.py`` cannot
shadow them. Metadata and dependencies are in ``setup.cfg``.
"""

import setuptools

LAYERS = ("algorithms", "models", "data", "experiments")

setuptools.setup(
    packages=[f"reprojax.{p}" for p in setuptools.find_packages(
        include=[*LAYERS, *(f"{layer}.*" for layer in LAYERS)])],
    package_dir={f"reprojax.{layer}": layer for layer in LAYERS},
)
