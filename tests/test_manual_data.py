"""The ``manual_dataset`` fixture: a missing real dataset skips outside CI and fails in CI."""

import pytest


def test_missing_dataset_skips_with_one_line_outside_ci(manual_dataset, monkeypatch, tmp_path):
  monkeypatch.delenv("CI", raising=False)
  monkeypatch.setenv("REPROJAX_MANUAL_DIR", str(tmp_path))
  with pytest.raises(pytest.skip.Exception) as e:
    manual_dataset("crowd_binary/jn_product", "answer.csv")
  line = str(e.value)
  assert "crowd_binary/jn_product" in line and "REPROJAX_MANUAL_DIR" in line and "\n" not in line


def test_missing_dataset_fails_under_ci(manual_dataset, monkeypatch):
  monkeypatch.setenv("CI", "true")
  monkeypatch.delenv("REPROJAX_MANUAL_DIR", raising=False)
  with pytest.raises(pytest.fail.Exception, match="CI=true: needs real data: dataset .crowd_binary"):
    manual_dataset("crowd_binary/jn_product", "answer.csv")


def test_present_dataset_gives_its_folder(manual_dataset, monkeypatch, tmp_path):
  (tmp_path / "toy").mkdir()
  (tmp_path / "toy" / "a.csv").write_text("x\n")
  monkeypatch.setenv("REPROJAX_MANUAL_DIR", str(tmp_path))
  assert manual_dataset("toy", "a.csv") == str(tmp_path / "toy")
