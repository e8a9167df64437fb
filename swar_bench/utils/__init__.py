"""Helpers every layer may use, torch- and Lightning-free: atomic file writes and output checks
(``files``), Ctrl-C / SIGTERM handling (``interrupts``), folder locks (``locks``), the shared
option checks (``argparsing``), confidence intervals (``intervals``), quiet library output
(``quiet``) and counted nouns, YAML error text (``text``). They import only each other."""
