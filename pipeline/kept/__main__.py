"""`python -m pipeline.kept start|status|stop` (= `svmbench cluster ...`)."""
import sys

from pipeline.kept.cluster import main

sys.exit(main())
