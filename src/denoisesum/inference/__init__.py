"""Stage 5, inference: using trained models."""
