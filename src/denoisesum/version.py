"""The package's version (as pyproject.toml has it): what `--version`, the service and a
summarize output's sidecar say."""

__version__ = "0.1.0"
