"""The `denoisesum` command line: it parses and calls the package's Python API.

One module per command group, each registering its commands on the one app (app.py):
corpus.py (stats, tokenize, vocab, rating, aspects, opinion-set, topics), train.py (train-lm,
cloze, synthesize, train, fit), evaluate.py (evaluate, baseline, leaderboard, opinion),
summarize.py (summarize, serve); options.py holds what they share.
"""

from denoisesum.cli import corpus, evaluate, summarize, train
from denoisesum.cli.app import app, main

__all__ = ["app", "main"]
_COMMANDS = (corpus, train, evaluate, summarize)  # imported for their commands
