#!/usr/bin/env bash
# Regenerate lab/results/opinion-tone.md (issue 31: where opinion steering starts). The runs:
# see the "Reproduce" section of the page.
set -euo pipefail
cd "$(dirname "$0")/../.."
.venv/bin/python -m lab.studies.faithfulness page \
  --title "Opinion steering: opinion_tone 3.25, 3.5, 3.75 (issue 31)" \
  --intro lab/results/opinion-tone-notes.md \
  --systems "tone 3.25 (previous)=T325" "tone 3.5 (shipped)=T35" "tone 3.75=T375" "tone 3.5, against all=T35A" \
  --judged "part-15 (20 mixed, 5 negative, 5 positive businesses not judged before)=docs/results/judged/part15-tone.summary.json" \
           "dev (the 26 businesses whose summary tone 3.5 changes)=docs/results/judged/dev-tone.summary.json" \
           "dev, the shipped decoding over a whole sample (51 businesses, beside the human summaries)=docs/results/judged/dev-shipped.summary.json" \
  --markdown lab/results/opinion-tone.md \
  --commands \
  "bash scripts/setup.sh test" \
  "D=../shared/data/yelp/corpus" \
  ".venv/bin/denoisesum opinion-set \$D/part-14.jsonl.xz -o runs/opinion/set-part14.jsonl   # its first 30 per stratum: runs/opinion/set-tune.jsonl" \
  ".venv/bin/denoisesum opinion-set \$D/part-15.jsonl.xz -o runs/opinion/set-part15.jsonl" \
  "export OMP_NUM_THREADS=1" \
  "for t in 325 35 375; do .venv/bin/python -m lab.studies.faithfulness decode T\$t --sets tune,part15,dev,test --set decode.opinion_tone=\${t:0:1}.\${t:1}; done" \
  ".venv/bin/python -m lab.studies.faithfulness decode T35A --sets tune,part15,dev,test --set decode.opinion_tone=3.5 --set 'decode.against_reviews=\"all\"'" \
  ".venv/bin/python -m lab.studies.faithfulness score T325 T35 T375 T35A --rating src/denoisesum/pretrained/denoisesum-yelp" \
  ".venv/bin/python -m lab.studies.judging prepare runs/judge-part15 --sets part15 --systems tone325=runs/faith/T325/part15.jsonl tone35=runs/faith/T35/part15.jsonl tone375=runs/faith/T375/part15.jsonl --entities docs/results/judged/part15-tone.entities.jsonl --parts 2 --seed 7" \
  ".venv/bin/python -m lab.studies.judging prepare runs/judge-dev --sets dev --systems tone325=runs/faith/T325/dev.jsonl tone35=runs/faith/T35/dev.jsonl --entities docs/results/judged/dev-tone.entities.jsonl --parts 1 --seed 8" \
  ".venv/bin/python -m lab.studies.judging prepare runs/judge-shipped --sets dev --systems tone35=runs/faith/T35/dev.jsonl human=runs/judge/human.dev.jsonl --count 51 --parts 3 --seed 35   # human.dev.jsonl: each dev business's first reference" \
  "# the judges write verdicts-N.json in each folder (judging.py's docstring); then: .venv/bin/python -m lab.studies.judging collect runs/judge-part15 (and runs/judge-dev)" \
  "bash lab/studies/opinion_tone_page.sh"
