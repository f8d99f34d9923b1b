#!/usr/bin/env bash
# Regenerate lab/results/opinion-conditioned.md (issue 31: a model that conditions on its
# reviews' opinion, trained with `fit --from`). The runs: the page's "Reproduce" section.
set -euo pipefail
cd "$(dirname "$0")/../.."
J=docs/results/judged
.venv/bin/python -m lab.studies.faithfulness page \
  --title "An opinion-conditioned model trained with the recipe (issue 31)" \
  --intro lab/results/opinion-conditioned-notes.md \
  --systems "shipped=MB" "conditioned, steering 1.25=OC125" "conditioned, shipped steering (2.5)=OC" \
            "conditioned, no steering=OC0" "last step, steering 1.25=OCL125" \
            "last step, shipped steering=OCL" "last step, no steering=OCL0" \
  --judged "dev (40 businesses drawn at random): shipped against 'conditioned, steering 1.25'=$J/dev-conditioned.summary.json" \
           "part-15 (30 mixed and 10 negative businesses drawn at random): shipped against 'conditioned, steering 1.25'=$J/part15-conditioned.summary.json" \
  --markdown lab/results/opinion-conditioned.md \
  --commands \
  "bash scripts/setup.sh test" \
  "D=../shared/data/yelp/corpus" \
  ".venv/bin/denoisesum opinion-set \$D/part-14.jsonl.xz -o runs/opinion/set-part14.jsonl   # its first 30 per stratum: runs/opinion/set-tune.jsonl" \
  ".venv/bin/denoisesum opinion-set \$D/part-15.jsonl.xz -o runs/opinion/set-part15.jsonl" \
  "bash lab/results/opinion-model/fit-yelp/fit.sh   # 1.15 h; its log, report and learning curve: lab/results/opinion-model/fit-yelp/" \
  "export OMP_NUM_THREADS=1 S='--sets tune,part15,dev,test'" \
  ".venv/bin/python -m lab.studies.faithfulness decode MB \$S   # the shipped model and decoding" \
  "for m in OC:runs/opinion-fit OCL:runs/opinion-model-last; do n=\${m%%:*} d=\${m#*:}; .venv/bin/python -m lab.studies.faithfulness decode \$n \$S --model \$d; .venv/bin/python -m lab.studies.faithfulness decode \${n}0 \$S --model \$d --set decode.opinion_weight=0; .venv/bin/python -m lab.studies.faithfulness decode \${n}125 \$S --model \$d --set decode.opinion_weight=1.25; done" \
  ".venv/bin/python -m lab.studies.faithfulness score MB OC OC0 OC125 OCL OCL0 OCL125 --rating src/denoisesum/pretrained/denoisesum-yelp" \
  ".venv/bin/python -m lab.studies.judging prepare runs/judge-cond-dev --sets dev --systems shipped=runs/faith/MB/dev.jsonl conditioned=runs/faith/OC125/dev.jsonl --entities $J/dev-conditioned.entities.jsonl --parts 4 --seed 131" \
  ".venv/bin/python -m lab.studies.judging prepare runs/judge-cond-part15 --sets part15 --systems shipped=runs/faith/MB/part15.jsonl conditioned=runs/faith/OC125/part15.jsonl --entities $J/part15-conditioned.entities.jsonl --parts 4 --seed 132" \
  "# eight fresh judges, one per task file, with $J/judge-prompt.md; then for each folder: .venv/bin/python -m lab.studies.judging collect runs/judge-cond-NAME" \
  ".venv/bin/python -m lab.studies.judging paired shipped conditioned $J/dev-conditioned.judged.jsonl" \
  ".venv/bin/python -m lab.studies.judging paired shipped conditioned $J/part15-conditioned.judged.jsonl" \
  "bash lab/studies/opinion_conditioned_page.sh"
