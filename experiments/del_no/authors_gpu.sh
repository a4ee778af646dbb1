#!/usr/bin/env bash
# The authors' Burgers protocol at their size (issue 31), prepared for a lent GPU:
# 1024 points, 1000 training / 200 test pairs, 62,500 steps at batch 8 (500 epochs),
# their construction, its zero-channel twin and the plain FNO under their protocol,
# clean and with their train-only noise (sigma 0.05), 3 seeds each.
#
#   bash experiments/del_no/authors_gpu.sh [OUT_DIR]
#
# Not run here (no device was lent when it was written); its time is unmeasured. The
# CPU run of experiments/del_no/authors.py took about 10 ms per replica-step at 256
# points; on one H100 the 1024-point step of one replica should take well under that,
# and the three variants' 18 replicas train as three vmapped runs. Split the variants
# over several calls (--variants=authors, then fno_torch_zero, then fno_torch) if one
# call's limit is short. Data: the released Burgers law generated at 4096 points and
# subsampled to 1024 (the authors' file is 8192 subsampled by 8).
set -euo pipefail
out="${1:-${OUT:-/tmp/del_no_authors_gpu}}"
mkdir -p "$out"
python -m reprojax.experiments.del_no.authors \
  --pdes=burgers --conditions=clean,noisy \
  --variants="${VARIANTS:-authors,fno_torch_zero,fno_torch}" \
  --resolution=1024 --solver_resolution=4096 --n_train=1000 --n_test=200 \
  --steps=62500 --batch_size=8 --seeds=3 --init_seeds=3 --sigma=0.05 \
  --json_out="$out/authors_gpu.json" --readme_table=
