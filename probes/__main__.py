"""``python -m probes`` runs the probe."""

import sys

from probes.probe import main

sys.exit(main())
