"""`swar-bench` entry point: `data ...`, `referee ...`, `demo`, else LightningCLI (fit/validate/test/predict)."""

from __future__ import annotations

import sys


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0] == "data":
        from swar_bench.tasks.cli import main as data_main

        return data_main(argv[1:])
    if argv and argv[0] == "referee":
        from swar_bench.referee.cli import main as referee_main

        return referee_main(argv[1:])
    if argv and argv[0] == "demo":
        from swar_bench.demo import main as demo_main

        return demo_main(argv[1:])
    from swar_bench.lightning_cli import main as lightning_main

    return lightning_main(argv)


if __name__ == "__main__":
    sys.exit(main())
