"""Thin shim: `python cli.py ...` is `swar-bench ...`."""

import sys

from swar_bench.cli import main

if __name__ == "__main__":
    sys.exit(main())
