"""The passkey_swar data store: releases on disk and on the Hub, in the Hub repository's layout
(docs/TASK.md, "Configs and splits" and "Columns"), one module per idea:

- ``errors``: ``DataSourceError`` (exit 2) and ``CorruptDataError`` (exit 1);
- ``layout``: where a release's files lie, config and split names;
- ``source``: the one reading of a source (local folder or Hub id), the Hub asked once per run;
- ``parquet``: the split files' columns, written from and read back to examples;
- ``dataset_card``: the dataset card ``README.md`` and its ``configs:`` header;
- ``params_file``: the parameters record ``params.json``;
- ``checksums``: ``checksums.json``, the SHA-256 of every split file;
- ``release``: what keeps a folder from being a complete release;
- ``write``: generate a release into a folder;
- ``read``: load one config/split; ``verify``: the Oracle on every example;
  ``disjoint``: no example in two splits.

``swar_bench.tasks.hub_io`` re-exports the public names of all of them.
"""
