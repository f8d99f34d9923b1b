"""The recipe of the shipped models and its reports. The shell scripts are run with bash; the
Python reports as modules from the repository root, e.g. `python -m scripts.report_yelp --help`.
"""
