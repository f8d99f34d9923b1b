# the same fit command with the band choice (this commit's diff applied to the ../denoisesum-run worktree, whose installed model fit-band.sh adapted), after fit-band.sh at 8a610eb:
# its decode record was moved aside (work/decode.stage.old.json), so the decode stage chooses
# again, and the export and evaluate stages follow; every earlier stage is skipped
cd /work/main
date -u +%s > runs/adapt/fit-band-choice.start
PYTHONPATH=/work/denoisesum-run/src OMP_NUM_THREADS=2 .venv/bin/denoisesum fit runs/adapt/hotels-train.jsonl \
  --from denoisesum-yelp --noise-lm lms/bilm-yelp -o runs/adapt/model-band2 \
  --preset cpu-small --budget 0.35 \
  --set workers=2 --set synthesize.pairs=6000 --set train.train.threads=2 \
  --set train.train.eval_every=100 --set lm.train.threads=2 \
  --set synthesize.balance_ratings=true \
  --set train.model.opinion=true --set train.train.opinion_lr=0.01
echo "EXIT $?"
date -u +%s > runs/adapt/fit-band-choice.end
