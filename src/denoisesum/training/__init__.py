"""Stage 4, training: trainers, batching and crash-safe checkpoints."""
