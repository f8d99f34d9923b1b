#!/usr/bin/env bash
# After run.sh: each fine-tune with the shipped model's decoding and rating model, decoded and
# scored beside the shipped model (run SS of lab/results/side-shares.md). From /work/main.
set -euo pipefail
R=/work/denoisesum-run/runs/mask
SHIPPED=src/denoisesum/pretrained/denoisesum-yelp
for run in control masked; do
  .venv/bin/python - "$R/$run" "$SHIPPED" <<'PY'
import json, shutil, sys
run, shipped = sys.argv[1], sys.argv[2]
config = json.load(open(f"{run}/config.json"))
config["summarize"] = json.load(open(f"{shipped}/config.json"))["summarize"]
json.dump(config, open(f"{run}/config.json", "w"), indent=2)
for name in ("rating.npz", "rating-report.json"):
    shutil.copy(f"{shipped}/{name}", f"{run}/{name}")
PY
  OMP_NUM_THREADS=1 .venv/bin/python -m lab.studies.faithfulness decode "MASK-$run" --model "$R/$run" \
    --sets part15,dev,test > "$R/decode-$run.log" 2>&1 &
done
wait
.venv/bin/python -m lab.studies.faithfulness score MASK-control MASK-masked --rating $SHIPPED > "$R/score.log" 2>&1
