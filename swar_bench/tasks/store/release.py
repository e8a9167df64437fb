"""Release checks: what keeps a local folder from being a complete release (the files
``datasets.load_dataset`` needs and the content of its metadata files), as a list and as the
one line every command prints."""

from __future__ import annotations

import glob
import json
import os

from swar_bench.tasks.passkey_swar import ALLOWED_N, SPLIT_SEEDS, PasskeySwarParams, vocab
from swar_bench.tasks.store.checksums import checksum_faults, relative_name
from swar_bench.tasks.store.dataset_card import README_PARAMS_RE, readme_data_files
from swar_bench.tasks.store.errors import DataSourceError, json_problem
from swar_bench.tasks.store.layout import (
    CHECKSUMS_FILE,
    CONFIG_RE,
    PARAMS_FILE,
    card_files,
    config_name,
)
from swar_bench.tasks.store.params_file import params_diff, params_from, read_record


def _vocab_fault(folder: str, params: PasskeySwarParams) -> str | None:
    """What is wrong with ``DIR/vocab.json`` (``None`` when it is the vocabulary
    :func:`~swar_bench.tasks.passkey_swar.write_vocab_json` writes for ``params``)."""
    path = os.path.join(folder, "vocab.json")
    expected = vocab(params).to_dict()
    want = (
        f"expected the {len(expected)} tokens of n_keys={params.n_keys}, n_values={params.n_values} "
        f"(PAD=0 ... {next(reversed(expected))}={len(expected) - 1}), as `swar-bench data vocab` writes"
    )
    try:
        with open(path, encoding="utf-8") as f:
            found = json.load(f)
    except (OSError, ValueError) as exc:
        return f"vocab.json: {json_problem(exc)}; {want}"
    if found == expected:
        return None
    if not isinstance(found, dict):
        return f"vocab.json: a JSON {type(found).__name__}, not an object {{token: id}}; {want}"
    wrong = [f"{t}={found[t]!r} (expected {i})" for t, i in expected.items() if t in found and found[t] != i]
    lacking = [t for t in expected if t not in found]
    extra = [t for t in found if t not in expected]
    what = []
    if lacking:
        what.append(f"lacks {len(lacking)} token(s) ({', '.join(lacking[:3])}{', ...' if len(lacking) > 3 else ''})")
    if extra:
        what.append(f"has {len(extra)} unknown token(s) ({', '.join(map(repr, extra[:3]))}{', ...' if len(extra) > 3 else ''})")
    if wrong:
        what.append(f"has wrong ids: {', '.join(wrong[:3])}{', ...' if len(wrong) > 3 else ''}")
    return f"vocab.json: {len(found)} token(s), {'; '.join(what)}; {want}"


def _release_faults(folder: str | os.PathLike, checksums: bool = True) -> tuple[list[str], list[str]]:
    """``(missing, wrong)``: :func:`release_problems` in two lists, the files (or entries) that
    are absent, and the metadata files present with a wrong content (each ``"FILE: what"``);
    without ``checksums`` the split files' bytes are not hashed (the metadata checks only)."""
    folder = os.fspath(folder)
    missing: list[str] = []
    wrong: list[str] = []
    try:
        listed = readme_data_files(folder)
    except DataSourceError as exc:
        wrong.append(_named_fault(str(exc), folder))
        listed = None
    readme = os.path.join(folder, "README.md")
    generated_here = listed is None or os.path.isfile(os.path.join(folder, PARAMS_FILE))
    has_readme = listed is not None
    if listed is None:
        if not wrong:
            missing.append("README.md (its configs list is what datasets.load_dataset reads)")
        listed = {}
    else:
        with open(readme, encoding="utf-8", errors="replace") as f:
            generated_here = generated_here or README_PARAMS_RE.search(f.read()) is not None

    def order(name: str) -> tuple:
        config, split = name.split("/", 1)
        m = CONFIG_RE.match(config)
        rank = list(SPLIT_SEEDS).index(split) if split in SPLIT_SEEDS else len(SPLIT_SEEDS)
        return (m is None, int(m.group(1)) if m else 0, config, rank, split)

    no_file = [
        f"{config}/{split}"
        for config, by_split in listed.items()
        for split, patterns in by_split.items()
        if not any(glob.glob(os.path.join(folder, p)) for p in patterns)
    ]
    if no_file:
        missing.append(f"the split files README.md lists: {', '.join(sorted(no_file, key=order))}")
    unlisted = [
        f"{config_name(n)}/{split}"
        for n, splits in card_files(folder).items()
        for split in splits
        if split not in listed.get(config_name(n), {})
    ]
    if unlisted and has_readme:
        missing.append(f"README.md entries for the split files {', '.join(unlisted)}")
    if not os.path.isfile(os.path.join(folder, "vocab.json")):
        missing.append("vocab.json")
    if generated_here and not os.path.isfile(os.path.join(folder, PARAMS_FILE)):
        missing.append(PARAMS_FILE)
    if generated_here and card_files(folder) and not os.path.isfile(os.path.join(folder, CHECKSUMS_FILE)):
        missing.append(f"{CHECKSUMS_FILE} (the SHA-256 of every split file)")
    if checksums:
        wrong += checksum_faults(folder)
    # The record (params.json, else README.md's Parameters line) must be valid parameters, the
    # two must agree, and vocab.json must be the vocabulary of those parameters.
    params = PasskeySwarParams()
    try:
        record = read_record(folder)
        if record is not None:
            params = record[0]
            if record[1] != readme and os.path.isfile(readme):
                with open(readme, encoding="utf-8", errors="replace") as f:
                    m = README_PARAMS_RE.search(f.read())
                if m:
                    line = params_from(_json_or_none(m.group(1)), f"{readme} (Parameters line)")
                    if line != params:
                        have, other = params_diff(params, line)
                        wrong.append(f"README.md: its Parameters line says {other}, params.json {have}")
    except DataSourceError as exc:
        wrong.append(_named_fault(str(exc), folder))
        params = None
    if params is not None and os.path.isfile(os.path.join(folder, "vocab.json")):
        fault = _vocab_fault(folder, params)
        if fault:
            wrong.append(fault)
    return missing, wrong


def _named_fault(message: str, folder: str) -> str:
    """``"FILE: what"`` from a :class:`DataSourceError` message about ``DIR/FILE`` (its path
    shortened to the file name)."""
    for name in ("README.md", PARAMS_FILE):
        path = os.path.join(folder, name)
        for prefix in (f"{path} (Parameters line): ", f"{path}: "):
            if message.startswith(prefix):
                return f"{name}: {message[len(prefix):]}"
    return message


def _json_or_none(text: str):
    try:
        return json.loads(text)
    except ValueError:
        return None


def release_problems(folder: str | os.PathLike) -> list[str]:
    """What keeps a local folder from being a complete release (empty when it is one): the
    files ``datasets.load_dataset(DIR, "n{N}", split=...)`` needs, and the content of its
    metadata files.

    - ``README.md`` with a ``configs:`` header (without it ``load_dataset`` knows no config; a
      README.md that is empty or has no such header is named as a wrong content);
    - every split file that header lists (a run cut short lists what it did not write);
    - every split file of the release on disk listed in that header (else it cannot be loaded);
    - ``vocab.json``; ``params.json`` for a folder written by ``swar-bench data generate`` (its
      README has a ``Parameters:`` line, or it has no README);
    - ``checksums.json`` for a folder written by ``swar-bench data generate``, and each split file's
      SHA-256 equal to its record there (:data:`CHECKSUMS_FILE`);
    - content: the README header is a configs list; ``params.json`` (else the README's
      ``Parameters:`` line) parses as :class:`PasskeySwarParams`, and the two agree;
      ``vocab.json`` equals the vocabulary of those parameters (of the release's without a record).

    Returns:
        One short phrase per problem: missing ones first, e.g. ``"the split files README.md
        lists: n32/test"``, then wrong contents, e.g. ``"vocab.json: not readable as JSON (...)"``.
    """
    missing, wrong = _release_faults(folder)
    return missing + wrong


def release_report(folder: str | os.PathLike, command: str = "generate", checksums: bool = True) -> str | None:
    """The one line saying what keeps ``folder`` from being a complete release
    (:func:`release_problems`), or ``None`` for a complete one: ``"DIR is not a complete release;
    missing: ... (a `swar-bench data COMMAND` cut short? ...); vocab.json: ..."``. Without
    ``checksums`` the split files are not hashed (the cheap metadata checks a training run makes
    before it reads the files, whose bytes :func:`load_split` then compares)."""
    missing, wrong = _release_faults(folder, checksums)
    parts = []
    if missing:
        parts.append(
            f"missing: {'; '.join(missing)} (a `swar-bench data {command}` cut short? run the "
            "same command again to complete it)"
        )
    parts += wrong
    return f"{os.fspath(folder)} is not a complete release; {'; '.join(parts)}" if parts else None


def check_release(folder: str | os.PathLike, command: str = "generate") -> None:
    """Raise unless :func:`release_problems` finds nothing.

    Raises:
        DataSourceError: one line naming the folder, everything missing or wrong
            (:func:`release_report`), and the command that completes it.
    """
    report = release_report(folder, command)
    if report:
        raise DataSourceError(report)



RELEASE_FILES = ("vocab.json", PARAMS_FILE, CHECKSUMS_FILE)
"""The metadata files that make a folder a release (whole or cut short), beside its split files;
``README.md`` alone does not: any folder may hold one (a dataset card included)."""


def release_files(folder: str | os.PathLike) -> list[str]:
    """The release's own files present in a local folder, as relative paths: :data:`RELEASE_FILES`
    and every split file ``n{N}/{split}-*.parquet`` (N in ``ALLOWED_N``, a split of the task: the
    files ``verify`` and ``check`` read). ``[]`` for a folder that holds no release at all (empty,
    only a README.md or dataset card, other files or folders): a wrong argument, not an incomplete
    release. ``swar-bench data generate`` writes ``params.json`` first, so a run cut short at any
    point leaves at least that."""
    folder = os.fspath(folder)
    found = [name for name in RELEASE_FILES if os.path.isfile(os.path.join(folder, name))]
    for n in ALLOWED_N:
        for split in SPLIT_SEEDS:
            pattern = os.path.join(glob.escape(folder), config_name(n), f"{split}-*.parquet")
            found += sorted(relative_name(folder, p) for p in glob.glob(pattern) if os.path.isfile(p))
    return found
