"""`python -m harness.providers.local up|down`: the old name of `python -m harness up --bare`
and `python -m harness down RUN_DIR`, still accepted."""

import sys

from harness.cli.main import main

args = ["--keep-run-dir" if a == "--keep" else a for a in sys.argv[1:]]
if args[:1] == ["up"]:
    args = ["up", "--bare", *args[1:]]
sys.exit(main(args))
