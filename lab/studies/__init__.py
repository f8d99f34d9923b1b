"""Research studies and one-off probes of denoisesum (see lab/studies/README.md).

They import the package and are never imported by it (tests/test_layers.py checks both ways).
Run one from the repository root as a module, e.g. `python -m lab.studies.decoding_levers --help`.
"""
