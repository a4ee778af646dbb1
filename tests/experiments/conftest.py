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
