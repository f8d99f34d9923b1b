"""The studies' tests (a package, so that their module names never clash with tests/')."""
