"""Peer libraries as references: MAPIE's split-conformal sets on fixed probabilities.

Used by the MAPIE equality tests and by ``benchmark.py``; MAPIE is a test extra.
"""

import numpy as np


def mapie_split_conformal(score, p, y, n, alpha, seed=0):
  """A function computing MAPIE's split-conformal sets for fixed probabilities ``p``.

  The first ``n`` rows calibrate, the rest are predicted; MAPIE (a test extra)
  sees a prefit classifier that looks its probabilities up by row index.
  """
  from mapie.classification import SplitConformalClassifier  # pylint: disable=g-import-not-at-top
  from sklearn.base import BaseEstimator, ClassifierMixin  # pylint: disable=g-import-not-at-top

  class Table(ClassifierMixin, BaseEstimator):
    def __init__(self, probs=None):
      self.probs = probs

    def fit(self, x, yy):
      del x, yy
      self.classes_ = np.arange(self.probs.shape[1])
      return self

    def predict_proba(self, x):
      return self.probs[np.asarray(x)[:, 0].astype(np.int64)]

    def predict(self, x):
      return self.predict_proba(x).argmax(1)

  x = np.arange(p.shape[0], dtype=np.float64)[:, None]
  est = Table(p).fit(x, y)

  def run():
    mp = SplitConformalClassifier(estimator=est, confidence_level=1 - alpha,
                                  conformity_score=score, prefit=True, random_state=seed)
    mp.conformalize(x[:n], y[:n])
    return mp.predict_set(x[n:])[1][:, :, 0]

  return run
