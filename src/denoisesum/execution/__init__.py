"""Execution: summarizing run over files and streams, in one place.

- inputs.py: review sets read one at a time (a review-set file, standard input, a corpus
  grouped by entity), cut into batches; an empty input is an error.
- outputs.py: the records, their formats (.jsonl, .csv, .parquet, .txt) and sinks.
- resume.py: the settings sidecar that lets a killed run continue, and refuses one made
  otherwise.
- executors.py: one executor interface (submit, close, workers), in order over any of them;
  `Inline` (this process, on threads), pool.py's `ProcessPool` (worker processes, each with a
  handler: `summarize`'s batches and `serve --workers`' requests), cluster.py's `Cluster`
  (Dask); workers.py: what a worker process runs for `summarize`.
- bulk.py: `run`, the summarize command's work, with one progress reporter.

This package sits above the summarizer (its workers load one) and below the service and the
command line, which both use it.
"""
