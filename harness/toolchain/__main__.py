"""`python -m harness.toolchain [build|paths] [COMPONENT...] [--kueue-version V]`: the old
name of `python -m harness build [binaries|COMPONENT...]`, still accepted."""

import sys

from harness.cli.main import main

args = sys.argv[1:]
action = args.pop(0) if args and args[0] in ("build", "paths") else "build"
names = [a for a in args if not a.startswith("-")]
options = [a for a in args if a.startswith("-") or a not in names]
extra = ["--paths"] if action == "paths" else []
sys.exit(main(["build", *(names or ["binaries"]), *options, *extra]))
