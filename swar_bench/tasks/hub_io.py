"""passkey_swar on disk and on the Hub: parquet in the Hub repository's layout.

The names of the data store, kept importable from here; each lives in one module of
:mod:`swar_bench.tasks.store` (layout, source resolution, split-file format, dataset card,
parameters record, checksums, release checks, writing, reading, verification, disjointness).
The generator names a release is written with (``PasskeySwarParams``, ``generate_flat``,
``vocab``, ...) are re-exported too, as before.
"""

from __future__ import annotations

from swar_bench.tasks.oracle import verify_example
from swar_bench.tasks.passkey_swar import (
    ALLOWED_N,
    SPLIT_SEEDS,
    SPLIT_SIZES,
    TRAIN_N,
    FlatBatch,
    PasskeySwarParams,
    examples_per_chunk,
    generate_flat,
    make_example,
    split_seeds,
    vocab,
    write_vocab_json,
)
from swar_bench.tasks.store.checksums import (
    check_checksums,
    file_sha256,
    read_checksums,
    record_checksums,
    write_checksums,
)
from swar_bench.tasks.store.dataset_card import (
    README_HEADER_WANT,
    write_readme,
)
from swar_bench.tasks.store.disjoint import (
    check_disjoint,
    example_hashes,
    shared_examples,
)
from swar_bench.tasks.store.errors import (
    CorruptDataError,
    DataSourceError,
)
from swar_bench.tasks.store.layout import (
    CHECKSUMS_FILE,
    COLUMNS,
    CONFIGS_SECTION,
    HUB_ID,
    PARAMS_FILE,
    card_configs_text,
    card_files,
    card_splits,
    check_card_config,
    config_name,
    parse_config,
    split_path,
    train_configs_text,
)
from swar_bench.tasks.store.params_file import (
    check_folder_params,
    folder_params,
    params_diff,
    read_params,
    write_params,
)
from swar_bench.tasks.store.parquet import (
    arrow_schema,
    arrow_table,
    check_parquet,
    finished_split,
    flat_to_table,
    iter_examples,
)
from swar_bench.tasks.store.read import (
    load_split,
    read_local_table,
)
from swar_bench.tasks.store.release import (
    RELEASE_FILES,
    check_release,
    release_files,
    release_problems,
    release_report,
)
from swar_bench.tasks.store.source import (
    check_source,
    is_hub_id,
    reach_hub,
    resolve_source,
)
from swar_bench.tasks.store.verify import (
    verify_dataset,
)
from swar_bench.tasks.store.write import (
    remove_stale_temp_files,
    write_dataset,
    write_split,
)

__all__ = [
    "ALLOWED_N",
    "CHECKSUMS_FILE",
    "COLUMNS",
    "CONFIGS_SECTION",
    "HUB_ID",
    "PARAMS_FILE",
    "README_HEADER_WANT",
    "RELEASE_FILES",
    "SPLIT_SEEDS",
    "SPLIT_SIZES",
    "TRAIN_N",
    "CorruptDataError",
    "DataSourceError",
    "FlatBatch",
    "PasskeySwarParams",
    "arrow_schema",
    "arrow_table",
    "card_configs_text",
    "card_files",
    "card_splits",
    "check_card_config",
    "check_checksums",
    "check_disjoint",
    "check_folder_params",
    "check_parquet",
    "check_release",
    "check_source",
    "config_name",
    "example_hashes",
    "examples_per_chunk",
    "file_sha256",
    "finished_split",
    "flat_to_table",
    "folder_params",
    "generate_flat",
    "is_hub_id",
    "iter_examples",
    "load_split",
    "make_example",
    "params_diff",
    "parse_config",
    "reach_hub",
    "read_checksums",
    "read_local_table",
    "read_params",
    "record_checksums",
    "release_files",
    "release_problems",
    "release_report",
    "remove_stale_temp_files",
    "resolve_source",
    "shared_examples",
    "split_path",
    "split_seeds",
    "train_configs_text",
    "verify_dataset",
    "verify_example",
    "vocab",
    "write_checksums",
    "write_dataset",
    "write_params",
    "write_readme",
    "write_split",
    "write_vocab_json",
]
