#!/usr/bin/env bash
# Regenerate docs/results/contradiction.md (issue 31: decoding that does not contradict itself).
# The runs: see the "Reproduce" section of the page.
set -euo pipefail
cd "$(dirname "$0")/../.."
J=docs/results/judged
.venv/bin/python -m lab.studies.faithfulness page \
  --title "Decoding without self-contradiction: detector v2, what is cut, steering's reach, verdicts of mixed places (issue 31)" \
  --intro lab/results/contradiction-notes.md \
  --systems "tone 3.5 (previous)=T35new" "detector v2 + cut=D3" "+ reach 1.0, follow opinion=F10" \
            "+ at odds=G10" "+ hedged (previous)=H" "not misleading first (not shipped)=NM" \
            "second search (not shipped)=RS" "both sides (not shipped)=MS5" \
            "unsteered for mixed (not shipped)=MU" \
  --judged "dev, round 4 (the 49 businesses outside the whole-sample study): shipped against the human summary=$J/dev-rest.summary.json" \
           "part-15, round 3 (the 29 mixed businesses whose summary 'both sides' changes): '+ at odds' against 'both sides'=$J/part15-sides.summary.json" \
           "part-15, round 2 (20 mixed and 10 negative businesses not judged before): previous against shipped=$J/part15-odds.summary.json" \
           "dev, round 2 (the 51 businesses of the earlier whole-sample study): previous against shipped=$J/dev-odds.summary.json" \
           "part-15, round 1 (20 mixed, 10 negative, 5 positive businesses not judged before): previous against '+ reach 1.0, follow opinion' (cut)=$J/part15-cut.summary.json" \
           "dev, round 1 (the 21 businesses whose summary '+ reach 1.0, follow opinion' changes)=$J/dev-cut.summary.json" \
  --calibration runs/faith/calibration.json \
  --markdown docs/results/contradiction.md \
  --commands \
  "bash scripts/setup.sh test" \
  "D=../shared/data/yelp/corpus" \
  ".venv/bin/denoisesum opinion-set \$D/part-14.jsonl.xz -o runs/opinion/set-part14.jsonl   # its first 30 per stratum: runs/opinion/set-tune.jsonl" \
  ".venv/bin/denoisesum opinion-set \$D/part-15.jsonl.xz -o runs/opinion/set-part15.jsonl" \
  "export OMP_NUM_THREADS=1 S='--sets part15,tune,dev,test'" \
  "git checkout 98e66d3 -- src && .venv/bin/python -m lab.studies.faithfulness decode T35new \$S && git checkout HEAD -- src   # the previous default's code and settings" \
  ".venv/bin/python -m lab.studies.faithfulness decode D3 \$S --set decode.opinion_reach=0 --set decode.follow_opinion=false   # at 58277f7 (before the at-odds cut)" \
  ".venv/bin/python -m lab.studies.faithfulness decode F10 \$S --set decode.follow_opinion=true --set decode.opinion_reach=1.0   # at 58277f7" \
  ".venv/bin/python -m lab.studies.faithfulness decode G10 \$S   # at 8ffd787 (before the hedged clause)" \
  ".venv/bin/python -m lab.studies.faithfulness decode H \$S --set decode.mixed_band=0   # the settings before mixed_band" \
  "git checkout 6f33516 -- src && .venv/bin/python -m lab.studies.faithfulness decode NM \$S && git checkout HEAD -- src" \
  "git checkout 02eef89 -- src && .venv/bin/python -m lab.studies.faithfulness decode MU \$S --set decode.mixed_unsteered=true && git checkout HEAD -- src" \
  "git checkout 3eb14ad -- src && for c in FB:-9:9 FB01:0:1 FB02:0:9; do IFS=: read n lo hi <<< \$c; FB_LO=\$lo FB_HI=\$hi .venv/bin/python -m lab.studies.faithfulness decode \$n \$S --set decode.opinion_feedback=true; done && git checkout HEAD -- src" \
  "git checkout a0f2073 -- src studies && .venv/bin/python -m lab.studies.faithfulness decode SP \$S --set decode.prefer_supported=true && git checkout HEAD -- src studies   # SC0: its first form, a study script, the same choice with the model fitted in another order of the judged files" \
  ".venv/bin/python -m lab.studies.judging prepare runs/judge-tune-support --sets tune --systems shipped=runs/faith/H/tune.jsonl support=runs/faith/SC0/tune.jsonl --entities $J/tune-support.entities.jsonl --parts 4 --seed 71" \
  "for r in 0.17:L17 0.2:L20; do .venv/bin/python -m lab.studies.faithfulness decode \${r#*:} \$S --set decode.length_ratio=\${r%:*}; done" \
  "git checkout eff93ba -- src && .venv/bin/python -m lab.studies.faithfulness decode HP2 \$S && git checkout HEAD -- src" \
  "git checkout 4cdc9ad -- src && .venv/bin/python -m lab.studies.faithfulness decode SPD \$S && git checkout HEAD -- src" \
  "git checkout 8dfbec7 -- src && .venv/bin/python -m lab.studies.faithfulness decode SPH \$S && git checkout HEAD -- src   # SPS: the same with _hedged_pair returning False" \
  ".venv/bin/python -m lab.studies.judging prepare runs/judge-speed-part15 --sets part15 --systems shipped=runs/faith/H/part15.jsonl speed=runs/faith/SPD/part15.jsonl --entities $J/part15-speed.entities.jsonl --parts 2 --seed 81" \
  ".venv/bin/python -m lab.studies.judging prepare runs/judge-speed-tune --sets tune --systems shipped=runs/faith/H/tune.jsonl speed=runs/faith/SPD/tune.jsonl --entities $J/tune-speed.entities.jsonl --parts 1 --seed 82" \
  ".venv/bin/python -m lab.studies.judging paired shipped speed $J/part15-speed.judged.jsonl $J/tune-speed.judged.jsonl" \
  ".venv/bin/python -m lab.studies.faithfulness decode MB \$S   # the shipped settings (mixed_band 0.25)" \
  ".venv/bin/python -m lab.studies.faithfulness decode MV0 \$S --set decode.mixed_band=0.5" \
  "git show 4cdc9ad -- src | git apply && .venv/bin/python -m lab.studies.faithfulness decode MV \$S --set decode.mixed_band=0.5 && git checkout -- src" \
  ".venv/bin/python -m lab.studies.judging prepare runs/judge-band-part15 --sets part15 --systems shipped=runs/faith/H/part15.jsonl band=runs/faith/MB/part15.jsonl --entities $J/part15-band.entities.jsonl --parts 3 --seed 101" \
  ".venv/bin/python -m lab.studies.judging prepare runs/judge-band-tune --sets tune --systems shipped=runs/faith/H/tune.jsonl band=runs/faith/MB/tune.jsonl --entities $J/tune-band.entities.jsonl --parts 1 --seed 102" \
  ".venv/bin/python -m lab.studies.judging prepare runs/judge-mv-part15 --sets part15 --systems shipped=runs/faith/H/part15.jsonl verdicts=runs/faith/MV/part15.jsonl --entities $J/part15-verdicts.entities.jsonl --parts 4 --seed 91" \
  ".venv/bin/python -m lab.studies.judging prepare runs/judge-mv-tune --sets tune --systems shipped=runs/faith/H/tune.jsonl verdicts=runs/faith/MV/tune.jsonl --entities $J/tune-verdicts.entities.jsonl --parts 1 --seed 92" \
  ".venv/bin/python -m lab.studies.judging paired shipped band $J/part15-band.judged.jsonl $J/tune-band.judged.jsonl" \
  ".venv/bin/python -m lab.studies.opinion_retry RS   # at 8ffd787: those settings, and a second search where the opinion is not the target's" \
  "git checkout e3e3647 -- src && .venv/bin/python -m lab.studies.faithfulness decode MS5 \$S --set decode.mixed_sides=true && git checkout HEAD -- src" \
  ".venv/bin/python -m lab.studies.faithfulness score T35new D3 F10 G10 H NM RS MS5 MU --rating src/denoisesum/pretrained/denoisesum-yelp" \
  ".venv/bin/python -m lab.studies.judging prepare runs/judge-part15-cut --sets part15 --systems tone35=runs/faith/T35new/part15.jsonl cut=runs/faith/F10/part15.jsonl --entities $J/part15-cut.entities.jsonl --parts 4 --seed 41" \
  ".venv/bin/python -m lab.studies.judging prepare runs/judge-dev-cut --sets dev --systems tone35=runs/faith/T35new/dev.jsonl cut=runs/faith/F10/dev.jsonl --entities $J/dev-cut.entities.jsonl --parts 2 --seed 42" \
  ".venv/bin/python -m lab.studies.judging prepare runs/judge-part15-odds --sets part15 --systems tone35=runs/faith/T35new/part15.jsonl odds=runs/faith/G10/part15.jsonl --entities $J/part15-odds.entities.jsonl --parts 3 --seed 51" \
  ".venv/bin/python -m lab.studies.judging prepare runs/judge-dev-odds --sets dev --systems tone35=runs/faith/T35new/dev.jsonl odds=runs/faith/G10/dev.jsonl --entities $J/dev-odds.entities.jsonl --parts 4 --seed 52" \
  "# the judges write verdicts-N.json in each folder (judging.py's docstring); then, for each: .venv/bin/python -m lab.studies.judging collect runs/judge-NAME" \
  ".venv/bin/python -m lab.studies.judging prepare runs/judge-part15-sides --sets part15 --systems shipped=runs/faith/G10/part15.jsonl sides=runs/faith/MS5/part15.jsonl --entities $J/part15-sides.entities.jsonl --parts 3 --seed 7" \
  ".venv/bin/python -m lab.studies.judging paired shipped sides $J/part15-sides.judged.jsonl" \
  ".venv/bin/python -c \"import json; [print(json.dumps({'entity_id': r['entity_id'], 'summary': r['summaries'][0]})) for r in map(json.loads, open('../shared/data/yelp/meansum_dev.jsonl'))]\" > runs/judge/human.dev.jsonl   # each dev business's first reference" \
  ".venv/bin/python -m lab.studies.judging prepare runs/judge-dev-rest --sets dev --systems shipped=runs/faith/H/dev.jsonl human=runs/judge/human.dev.jsonl --entities $J/dev-rest.entities.jsonl --parts 3 --seed 61" \
  ".venv/bin/python -m lab.studies.judging paired human shipped $J/dev-rest.judged.jsonl" \
  ".venv/bin/python -m lab.studies.judging paired tone35 odds $J/part15-odds.jsonl $J/dev-odds.jsonl" \
  ".venv/bin/python -m lab.studies.judging paired tone35 cut $J/part15-cut.jsonl $J/dev-cut.jsonl" \
  ".venv/bin/python -m lab.studies.faithfulness calibrate --rating src/denoisesum/pretrained/denoisesum-yelp --judged ../shared/data/yelp/judged/meansum_dev_veridicality.jsonl $J/{dev-study-1,dev-study-2,part15-opinion,dev-tone,part15-tone,dev-shipped,part15-cut,dev-cut,part15-odds,dev-odds,part15-sides.judged,dev-rest.judged}.jsonl --out runs/faith/calibration.json" \
  "bash lab/studies/contradiction_page.sh"
