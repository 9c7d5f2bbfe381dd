"""`python -m tableformat.cli`, the same as the `tableformat` console script."""
import sys

from .run import main

sys.exit(main())
