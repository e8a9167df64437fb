"""Studies: a fair comparison of mechanisms, from a study file to records, tables and figures
(``swar-bench study``). See ``spec`` (the file), ``protocol`` (score, gate, learning-rate choice),
``runner`` (executes the protocol), ``records`` and ``provenance`` (what each run leaves)."""
