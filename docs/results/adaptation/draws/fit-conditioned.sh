OMP_NUM_THREADS=2 denoisesum fit runs/adapt/hotels-train.jsonl \
  --from denoisesum-yelp --noise-lm lms/bilm-yelp -o runs/adapt/model-conditioned \
  --preset cpu-small --budget 0.35 \
  --set workers=2 --set synthesize.pairs=6000 --set train.train.threads=2 \
  --set train.train.eval_every=100 --set lm.train.threads=2 \
  --set synthesize.balance_ratings=true \
  --set train.model.opinion=true --set train.train.opinion_lr=0.01
