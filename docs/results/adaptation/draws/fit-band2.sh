# model-band2: `fit --from` with the band choice, run as two invocations of this command:
# fit-band.sh at 8a610eb (../denoisesum-run worktree) made every stage; fit-band-choice.sh, with
# the band choice applied there, made the decode, export and evaluate stages again (its decode
# record moved aside to work/decode.stage.old.json). fit-band2.start/.end time the sum of the two
# invocations: 1755 s + 37 s (their own .start/.end files are beside this one); the tests run
# alongside the first slowed its synthesis (6.8 min, against 4.2 min in fit-conditioned).
OMP_NUM_THREADS=2 denoisesum fit runs/adapt/hotels-train.jsonl \
  --from denoisesum-yelp --noise-lm lms/bilm-yelp -o runs/adapt/model-band2 \
  --preset cpu-small --budget 0.35 \
  --set workers=2 --set synthesize.pairs=6000 --set train.train.threads=2 \
  --set train.train.eval_every=100 --set lm.train.threads=2 \
  --set synthesize.balance_ratings=true \
  --set train.model.opinion=true --set train.train.opinion_lr=0.01
