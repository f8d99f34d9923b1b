"""Stage 1, data: reading review corpora and review-set files, tokenization, vocabulary."""
