"""The dataset card ``DIR/README.md``: its YAML ``configs:`` header (what
``datasets.load_dataset(DIR, "n{N}")`` reads), written and read back."""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterable

from swar_bench.tasks.passkey_swar import SPLIT_SEEDS, PasskeySwarParams
from swar_bench.tasks.store.errors import DataSourceError, first_line
from swar_bench.tasks.store.layout import HUB_ID, card_files, config_name, parse_config
from swar_bench.utils.files import atomic_write_text

README_PARAMS_RE = re.compile(r"^Parameters: `(\{.*?\})`", re.MULTILINE)


README_HEADER_WANT = (
    "expected a YAML header (between `---` lines at its top) with `configs:` entries of "
    "config_name and data_files, as `swar-bench data generate` writes"
)


def _yaml_kind(value: object) -> str:
    """``value`` (parsed YAML) as a phrase: ``"a mapping"``, ``"a list"``, ``"the string 'x'"``."""
    if value is None:
        return "empty"
    if isinstance(value, dict):
        return "a mapping"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, str):
        return f"the string {value if len(value) <= 40 else value[:40] + '...'!r}"
    return f"the {type(value).__name__} {value!r}"


def _readme_header(text: str) -> str | None:
    """The YAML block at the top of a README, split as ``datasets`` splits it
    (``datasets.utils.metadata._split_yaml_from_readme``: a first line ``---`` and a later line
    ``---``), or ``None`` when it has none."""
    lines = text.splitlines()
    if lines and lines[0] == "---" and "---" in lines[1:]:
        return "\n".join(lines[1 : lines[1:].index("---") + 1])
    return None


def readme_data_files(folder: str) -> dict[str, dict[str, list[str]]] | None:
    """``{config: {split: [path pattern, ...]}}`` from the YAML header of ``DIR/README.md`` (the
    list ``datasets.load_dataset(DIR, config)`` reads); ``None`` without a README.

    Raises:
        DataSourceError: a README that is empty, has no YAML header, or whose header is not YAML,
            has no ``configs:`` list, or is not a list of ``config_name`` / ``data_files``
            entries (one line naming the file).
    """
    import yaml

    path = os.path.join(folder, "README.md")
    if not os.path.isfile(path):
        return None
    with open(path, encoding="utf-8", errors="replace") as f:
        text = f.read()
    block = _readme_header(text)
    if block is None:
        if not text.strip():
            what = "the file is empty" if not text else "the file holds only blank space"
        elif text.splitlines()[0] != "---":
            what = "its first line is not `---`"
        else:
            what = "no `---` line closes the header"
        raise DataSourceError(f"{path}: no YAML header with a `configs:` list ({what}); {README_HEADER_WANT}")
    try:
        header = yaml.safe_load(block)
    except yaml.YAMLError as exc:
        raise DataSourceError(
            f"{path}: its YAML header is not valid YAML ({first_line(exc)}); {README_HEADER_WANT}"
        ) from None
    if not isinstance(header, dict):
        raise DataSourceError(
            f"{path}: its YAML header is {_yaml_kind(header)}, not a mapping with a `configs:` list; "
            + README_HEADER_WANT
        )
    configs = header.get("configs")
    if configs is None:
        raise DataSourceError(f"{path}: its YAML header has no `configs:` list; {README_HEADER_WANT}")
    if not isinstance(configs, list):
        raise DataSourceError(
            f"{path}: its YAML header's `configs:` is {_yaml_kind(configs)}, not a list; {README_HEADER_WANT}"
        )
    for i, entry in enumerate(configs, 1):
        if not isinstance(entry, dict) or "config_name" not in entry:
            raise DataSourceError(
                f"{path}: entry {i} of its YAML header's `configs:` is {_yaml_kind(entry)}, not a mapping "
                f"with a config_name; {README_HEADER_WANT}"
            )
    try:
        listed: dict[str, dict[str, list[str]]] = {}
        for entry in configs:
            files = entry.get("data_files", [])
            if isinstance(files, str):
                files = [{"split": "train", "path": files}]
            elif isinstance(files, dict):
                files = [{"split": k, "path": v} for k, v in files.items()]
            by_split = listed.setdefault(str(entry["config_name"]), {})
            for item in files:
                paths = item["path"] if isinstance(item["path"], list) else [item["path"]]
                by_split.setdefault(str(item["split"]), []).extend(str(p) for p in paths)
    except (AttributeError, KeyError, TypeError) as exc:
        raise DataSourceError(
            f"{path}: its YAML header is not a configs list ({first_line(exc)}); expected "
            "`configs:` entries with config_name and data_files, as `swar-bench data generate` writes"
        ) from exc
    return listed


def write_readme(
    out_dir: str | os.PathLike,
    params: PasskeySwarParams | None = None,
    planned: Iterable[tuple[str, str]] = (),
) -> str:
    """(Re)write ``DIR/README.md`` with a YAML ``configs:`` header listing every split file of
    the release present under ``DIR/n{N}/`` (:func:`card_files`; so repeated ``generate`` calls
    accumulate configs) and every ``(config, split)`` of ``planned``, written or not.

    :func:`write_dataset` writes it first with the splits it is about to write, so a folder whose
    writing was cut short lists what it lacks (:func:`release_problems` names it), and again at
    the end."""
    params = params or PasskeySwarParams()
    out_dir = os.fspath(out_dir)
    found = {n: set(splits) for n, splits in card_files(out_dir).items()}
    for config, split in planned:
        found.setdefault(parse_config(config), set()).add(split)
    lines = ["---", "configs:"]
    for n in sorted(found):
        lines += [f"- config_name: {config_name(n)}", "  data_files:"]
        for split in (s for s in SPLIT_SEEDS if s in found[n]):
            lines += [
                f"  - split: {split}",
                f"    path: {config_name(n)}/{split}-00000-of-00001.parquet",
            ]
    lines += ["---", "", "# passkey_swar (generated locally)", ""]
    lines += [
        "Passkey + Sliding-Window Associative Recall, generated by `swar-bench data generate` in the",
        f"layout of the Hub dataset `{HUB_ID}`. Per-example seed = split_seed * 10**12 + N * 10**6 + index;",
        "`swar_bench.tasks.passkey_swar.make_example(seed, N, params)` reproduces an example exactly.",
        "",
        f"Parameters: `{json.dumps(params.to_dict())}`; split seeds `{json.dumps(SPLIT_SEEDS)}`.",
        "",
    ]
    path = os.path.join(out_dir, "README.md")
    atomic_write_text(path, "\n".join(lines))
    return path
