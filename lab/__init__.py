"""The lab: studies, lab-only instruments and superseded results, apart from the product.

Never shipped (only `src/` goes into the wheel) and never imported by the package. Run from the
repository root as modules: `python -m lab.studies.NAME`, `python -m lab.benchmarks.NAME`.
"""
