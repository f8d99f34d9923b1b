"""The project's fixtures (tests/conftest.py, on the path by pyproject's pytest `pythonpath`) for
the studies' tests too."""

from conftest import one_thread  # noqa: F401  (a fixture: pytest finds it by name here)
