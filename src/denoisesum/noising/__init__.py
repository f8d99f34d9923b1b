"""Stage 2, noising: synthetic (noisy reviews, summary) pairs from a corpus without summaries."""
