"""Benchmarks of the package (run as `python -m benchmarks.NAME`) and `common`, the helpers they
share with the studies and the report scripts (imported as `benchmarks.common`)."""
