"""Where token noising spends its time: LSTMs, full-vocabulary output, nucleus sampling.

`head_first_nucleus_seconds` is what `synthesize` does now (distribution and sampling together);
`full_vocab_log_prob_seconds` + `nucleus_seconds` is the plain way it replaced.

    python -m benchmarks.noising_profile runs/synth-yelp-5k runs/bilm-yelp/encoded \
        lms/bilm-yelp > runs/noising-profile.json

Times one LM batch of the run's first candidates on one thread (as a synthesize worker runs),
best of 3. Prints JSON.
"""

from __future__ import annotations

import argparse
import json
import time

import numpy as np
import torch

from denoisesum.noising import shard
from denoisesum.noising.token_noise import lm_nucleus_sample, nucleus_sample


def best_of(fn, repeats: int = 3) -> float:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def head_coverage(head, contexts: torch.Tensor, top_p: float = 0.9) -> dict[str, float]:
    """Share of positions whose nucleus closes inside the head, and share the bound certifies."""
    probs = head.head(contexts).softmax(-1)
    shortlist = head.shortlist_size
    words, clusters = probs[:, :shortlist].clone(), probs[:, shortlist:]
    words[:, :4] = 0.0
    mass = words.sum(-1) + clusters.sum(-1)
    top = words.sort(-1, descending=True).values / mass.unsqueeze(1)
    cum = top.cumsum(-1)
    closes = cum[:, -1] >= top_p
    last = (cum < top_p).sum(-1).clamp(max=shortlist - 1)
    cut = top.gather(1, last.unsqueeze(1)).squeeze(1) * mass
    certified = closes & (cut >= clusters.amax(-1))
    return {
        "closes_in_head": float(closes.float().mean()),
        "certified_by_cluster_bound": float(certified.float().mean()),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    for name in ("run", "corpus", "lm"):
        parser.add_argument(name)
    parser.add_argument("--batch", type=int, default=32)
    args = parser.parse_args()
    res = shard._resources(shard.Job(args.run, args.corpus, args.lm, {}))
    plan, corpus, model = res["plan"], res["corpus"], res["model"]
    batch = [shard.review_ids(corpus, int(plan.candidates[k])) for k in range(args.batch)]
    lengths = torch.tensor([len(t) for t in batch])
    ids = torch.zeros(len(batch), int(lengths.max()), dtype=torch.long)
    for row, type_ids in enumerate(batch):
        ids[row, : len(type_ids)] = res["table"][torch.from_numpy(type_ids.astype(np.int64))]
    with torch.no_grad():
        ctx = model.contexts(ids, lengths)
        flat = ctx.reshape(-1, ctx.shape[-1])
        log_probs = model.head.log_prob(flat).view(len(batch), -1, model.config.vocab_size)
        generator = torch.Generator().manual_seed(0)
        result = {
            "candidates": len(batch),
            "positions": int(lengths.sum()),
            "lstm_seconds": best_of(lambda: model.contexts(ids, lengths)),
            "full_vocab_log_prob_seconds": best_of(lambda: model.head.log_prob(flat)),
            "head_only_seconds": best_of(lambda: model.head.head(flat)),
            "nucleus_seconds": best_of(
                lambda: [
                    nucleus_sample(log_probs[r, : lengths[r]], 0.9, 8, generator)
                    for r in range(len(batch))
                ]
            ),
            "head_first_nucleus_seconds": best_of(
                lambda: [
                    lm_nucleus_sample(model.head, ctx[r, : lengths[r]], 0.9, 8, generator)
                    for r in range(len(batch))
                ]
            ),
            **head_coverage(
                model.head, torch.cat([ctx[r, : lengths[r]] for r in range(len(batch))])
            ),
            "threads": torch.get_num_threads(),
        }
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
