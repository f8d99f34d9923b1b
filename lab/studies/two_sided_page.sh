#!/usr/bin/env bash
# Regenerate docs/results/two-sided.md (issue 31: reviews of both minds summarized side by
# side, decode.mixed_sides). The runs: the page's "Reproduce" section.
set -euo pipefail
cd "$(dirname "$0")/../.."
J=docs/results/judged PAGE=docs/results/two-sided
.venv/bin/python -m lab.studies.faithfulness page --markdown $PAGE.md --intro $PAGE-notes.md \
  --title "Reviews of both minds, summarized side by side (issue 31)" \
  --systems "shipped before=MB" "two sides (shipped)=MS" \
  --judged "part-15 (40 of the 100 mixed businesses it changes, drawn at random): the previous default against two sides=$J/part15-twosided.summary.json" \
           "part-15, second round (the other 60 mixed businesses): the previous default against two sides=$J/part15-twosided2.summary.json" \
           "dev (the 7 businesses it changes): the previous default against two sides=$J/dev-twosided.summary.json" \
  --commands \
  "bash scripts/setup.sh test" \
  "D=../shared/data/yelp/corpus" \
  ".venv/bin/denoisesum opinion-set \$D/part-14.jsonl.xz -o runs/opinion/set-part14.jsonl   # its first 30 per stratum: runs/opinion/set-tune.jsonl" \
  ".venv/bin/denoisesum opinion-set \$D/part-15.jsonl.xz -o runs/opinion/set-part15.jsonl" \
  "export OMP_NUM_THREADS=1 S='--sets tune,part15,dev,test'" \
  ".venv/bin/python -m lab.studies.faithfulness decode MB \$S --set decode.mixed_sides=false   # the previous default" \
  ".venv/bin/python -m lab.studies.faithfulness decode MS \$S   # the shipped decoding" \
  ".venv/bin/python -m lab.studies.faithfulness score MB MS --rating src/denoisesum/pretrained/denoisesum-yelp" \
  "# the judged businesses ($J/{part15,dev}-twosided.entities.jsonl): of the summaries MS splits (they start 'Some reviewers'), random.Random(141).sample(part15's, 40), the other 60 (part15-twosided2) and all 7 of dev's" \
  ".venv/bin/python -m lab.studies.judging prepare runs/judge-sides-part15 --sets part15 --systems shipped=runs/faith/MB/part15.jsonl sides=runs/faith/MS/part15.jsonl --entities $J/part15-twosided.entities.jsonl --parts 4 --seed 143" \
  ".venv/bin/python -m lab.studies.judging prepare runs/judge-sides-part15b --sets part15 --systems shipped=runs/faith/MB/part15.jsonl sides=runs/faith/MS/part15.jsonl --entities $J/part15-twosided2.entities.jsonl --parts 6 --seed 145   # the other 60" \
  ".venv/bin/python -m lab.studies.judging prepare runs/judge-sides-dev --sets dev --systems shipped=runs/faith/MB/dev.jsonl sides=runs/faith/MS/dev.jsonl --entities $J/dev-twosided.entities.jsonl --parts 1 --seed 144" \
  "# eleven fresh judges, one per task file, with $J/judge-prompt.md; then for each folder: .venv/bin/python -m lab.studies.judging collect runs/judge-sides-NAME" \
  ".venv/bin/python -m lab.studies.judging paired shipped sides $J/part15-twosided.judged.jsonl $J/part15-twosided2.judged.jsonl" \
  ".venv/bin/python -m lab.studies.judging paired shipped sides $J/dev-twosided.judged.jsonl" \
  "bash lab/studies/two_sided_page.sh"
