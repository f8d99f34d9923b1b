"""Stage 3, models: one file per model, plain PyTorch."""
