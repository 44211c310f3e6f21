"""Entry point for `python -m harness`."""

import sys

from harness import progress
from harness.cli import main

progress.show_on_stderr()  # builds, cluster starts and scenarios report as they go
sys.exit(main())
