"""Fixtures of the experiment tests."""

import pytest


@pytest.fixture
def one_train_step(monkeypatch):
  """Makes ``train.make_train_step`` build one compiled step per batch size for the test,
  so the runs a stop-and-resume test compares share it: what is tested is what
  ``train.fit`` does around the step (checkpoints, resume), not the compile."""
  from reprojax.experiments import train  # pylint: disable=g-import-not-at-top
  steps = {}
  build = train.make_train_step
  monkeypatch.setattr(train, "make_train_step",
                      lambda **kw: steps.setdefault(kw["batch_size"], build(**kw)))


@pytest.fixture
def resumes_bit_identically(one_train_step, tmp_path):
  """``check(train, checkpoints)``: the stop-and-resume test of a paper in
  ``registry.CHECKPOINTED`` (the hard kill is the shared loop's, fno's launcher test).

  ``train(workdir, mesh, stop_after)`` trains the paper's model under ``workdir`` on ``mesh``
  (one device: compiles fastest) with a checkpoint every 4 steps, stopping after
  ``stop_after`` steps when given, and returns its parameters; ``checkpoints(workdir)`` is
  the folder its checkpoints go to. A run stopped after step 4 and resumed must end
  bit-identical to an uninterrupted one, and differ from the stopped one. The runs share
  one compiled step (``one_train_step``): what is tested is what ``fit`` does around it.
  """
  import jax  # pylint: disable=g-import-not-at-top
  import numpy as np  # pylint: disable=g-import-not-at-top
  from reprojax.experiments import sharding  # pylint: disable=g-import-not-at-top
  del one_train_step

  def check(train, checkpoints):
    mesh = sharding.make_mesh({"data": 1}, devices=jax.devices()[:1])
    straight = train(tmp_path / "a", mesh, None)
    stopped = train(tmp_path / "b", mesh, 4)
    assert sorted(p.name for p in checkpoints(tmp_path / "b").iterdir()) == ["4"]
    resumed = train(tmp_path / "b", mesh, None)
    jax.tree.map(np.testing.assert_array_equal, straight, resumed)
    assert not all(jax.tree.leaves(jax.tree.map(np.array_equal, straight, stopped)))

  return check
