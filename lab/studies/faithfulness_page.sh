#!/usr/bin/env bash
# Regenerate docs/results/faithfulness.md from this session's runs (issue 31). The runs
# themselves: see the "Reproduce" section of the page.
set -euo pipefail
cd "$(dirname "$0")/../.."
.venv/bin/python -m lab.studies.faithfulness page \
  --title "Faithfulness: opinion, self-contradiction, support (issue 31)" \
  --intro lab/results/faithfulness-notes.md \
  --systems old=base "new (F1, first detector)=F1" new=F1b "conditioned (no steering)=C0" "conditioned + steering=C25" "$@" \
  --judged "dev study 1 (50 dev businesses of the shared judged sample; new = F1)=docs/results/judged/dev-study-1.summary.json" \
           "dev study 2 (the other 50 dev businesses; new = the shipped decoding)=docs/results/judged/dev-study-2.summary.json" \
           "part-15 opinion study (10 businesses per stratum; new = the shipped decoding)=docs/results/judged/part15-opinion.summary.json" \
  --commands \
  "bash scripts/setup.sh test" \
  "D=../shared/data/yelp/corpus" \
  "# the rating model (shipped as src/denoisesum/pretrained/denoisesum-yelp/rating.npz)" \
  ".venv/bin/denoisesum rating \"\$D/part-0*.jsonl.xz\" \"\$D/part-1[0-3].jsonl.xz\" --heldout \$D/part-14.jsonl.xz -o runs/rating-yelp" \
  "# the opinion sets: part-14 (tuning: its first 30 per stratum, runs/opinion/set-tune.jsonl) and part-15 (reporting)" \
  ".venv/bin/denoisesum opinion-set \$D/part-14.jsonl.xz -o runs/opinion/set-part14.jsonl" \
  ".venv/bin/denoisesum opinion-set \$D/part-15.jsonl.xz -o runs/opinion/set-part15.jsonl" \
  "# old: the release's code in a worktree (git worktree add ../denoisesum-base cf8f36d), its predictions copied to runs/faith/base/{tune,part15,dev,test}.jsonl" \
  "OMP_NUM_THREADS=1 .venv/bin/python -m lab.studies.faithfulness decode F1b --sets dev,tune,part15,test   # the shipped decoding" \
  "# the conditioned model (lab/results/opinion-model/TRAINING.md) with the shipped decoding settings, rating.npz copied into its directory:" \
  "S=\"--set decode.avoid_contradiction=true --set decode.end_at_sentence=true --set decode.min_length=90 --set decode.max_length=110 --set decode.length_ratio=0.15 --set decode.against_reviews=overall --set decode.opinion_tone=3.25\"" \
  "for w in 0 2.5; do .venv/bin/python -m lab.studies.faithfulness decode C\${w/./} --model runs/opinion-model --sets part15,dev,test \$S --set decode.opinion_weight=\$w; done" \
  ".venv/bin/python -m lab.studies.faithfulness score base F1 F1b C0 C25 && .venv/bin/python -m lab.studies.faithfulness calibrate --rating src/denoisesum/pretrained/denoisesum-yelp --judged ../shared/data/yelp/judged/meansum_dev_veridicality.jsonl" \
  "bash lab/studies/faithfulness_page.sh"
