"""`python -m pipeline.data ...`: the dataset store's command line (`pipeline.data.cli`)."""
import sys

from .cli import main

sys.exit(main())
