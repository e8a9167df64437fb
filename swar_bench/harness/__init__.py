"""The Lightning command line (``swar-bench fit|validate|test|predict``) in pieces, one idea a
module: run folders (``runs``, ``run_folders``), options refused before Lightning is imported
(``fast_options``), option and config checks (``checks``), checkpoint checks (``checkpoints``),
stops and exit statuses (``stops``), the error lines of a failed run (``errors``) and the run's
announcement (``announce``). ``swar_bench.lightning_cli`` assembles them into ``SwarBenchCLI``
and ``main``."""
