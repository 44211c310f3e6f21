"""`python -m harness.providers.local up|down`: the embedded cluster for humans."""

import sys

from harness.providers.local.cli import main

sys.exit(main())
