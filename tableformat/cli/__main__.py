"""`python -m tableformat.cli`, the same as the `tableformat` console script."""
from .run import console_main

console_main()
