"""`python -m denoisesum.cli` (and `torchrun -m denoisesum.cli`): the `denoisesum` command."""

from denoisesum.cli import main

main()
