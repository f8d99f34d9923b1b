"""denoisesum: unsupervised opinion summarization by noising and denoising."""

__version__ = "0.1.0"
