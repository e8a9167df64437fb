"""The parameters record ``DIR/params.json``: one folder holds data of one parameter set
(:class:`~swar_bench.tasks.passkey_swar.PasskeySwarParams`), read, compared and written here."""

from __future__ import annotations

import json
import os

from swar_bench.tasks.passkey_swar import PasskeySwarParams
from swar_bench.tasks.store.dataset_card import README_PARAMS_RE
from swar_bench.tasks.store.errors import DataSourceError, json_problem
from swar_bench.tasks.store.layout import PARAMS_FILE, card_files
from swar_bench.utils.files import atomic_write_text
from swar_bench.utils.yaml_keys import DuplicateKey, json_unique


def params_from(fields, where: str) -> PasskeySwarParams:
    if not isinstance(fields, dict) or set(fields) - set(PasskeySwarParams().to_dict()):
        raise DataSourceError(
            f"{where}: expected a JSON object of PasskeySwarParams fields "
            f"({', '.join(PasskeySwarParams().to_dict())})"
        )
    try:
        return PasskeySwarParams(**fields)
    except ValueError as exc:
        raise DataSourceError(f"{where}: {exc}") from exc


def read_params(folder: str | os.PathLike) -> PasskeySwarParams | None:
    """The generator parameters a local folder records: ``DIR/params.json``, else the
    ``Parameters:`` line of a ``DIR/README.md`` written by :func:`write_readme` (folders from
    before ``params.json``); ``None`` when the folder records none (e.g. a download of the Hub
    release, which has the default parameters, docs/TASK.md "Generation").

    Raises:
        DataSourceError: a record that is not valid JSON or not valid parameters (names the file).
    """
    record = read_record(folder)
    return None if record is None else record[0]


def read_record(folder: str | os.PathLike) -> tuple[PasskeySwarParams, str] | None:
    """:func:`read_params` and the file it was read from."""
    folder = os.fspath(folder)
    path = os.path.join(folder, PARAMS_FILE)
    if os.path.isfile(path):
        try:
            with open(path, encoding="utf-8") as f:
                fields = json_unique(f.read())
        except DuplicateKey as exc:  # JSON would keep the last value: a folder recording two values of one field
            raise DataSourceError(f"{path}: {exc}; expected the task's parameters as `swar-bench data generate` "
                                  "writes them") from None
        except (OSError, ValueError) as exc:
            raise DataSourceError(
                f"{path}: {json_problem(exc)}; expected the task's parameters as `swar-bench data generate` writes them"
            ) from None
        return params_from(fields, path), path
    readme = os.path.join(folder, "README.md")
    if os.path.isfile(readme):
        with open(readme, encoding="utf-8", errors="replace") as f:
            m = README_PARAMS_RE.search(f.read())
        if m:
            try:
                fields = json.loads(m.group(1))
            except ValueError as exc:
                raise DataSourceError(f"{readme}: its Parameters line is {json_problem(exc)}") from None
            return params_from(fields, f"{readme} (Parameters line)"), readme
    return None


def params_diff(a: PasskeySwarParams, b: PasskeySwarParams) -> tuple[str, str]:
    """The fields where ``a`` and ``b`` differ, as ``("w=16", "w=8")`` (comma-separated)."""
    da, db = a.to_dict(), b.to_dict()
    keys = [k for k in da if da[k] != db[k]]
    return ", ".join(f"{k}={da[k]}" for k in keys), ", ".join(f"{k}={db[k]}" for k in keys)


def folder_params(
    folder: str | os.PathLike, params: PasskeySwarParams | None = None, option: str = "--params"
) -> PasskeySwarParams:
    """The parameters to read a local folder with: its record (:func:`read_params`), or
    ``params``, or the release's. ``params`` that differ from the record are an error: the
    folder's data was not generated with them.

    Raises:
        DataSourceError: ``params`` differ from the folder's record (names the fields), or a bad
            record.
    """
    found = read_record(folder)
    if found is not None and params is not None and params != found[0]:
        have, want = params_diff(found[0], params)
        raise DataSourceError(
            f"{option} {want} differ from {have} recorded in {found[1]}: the folder's data was "
            f"generated with those; leave {option} out to use them"
        )
    return found[0] if found is not None else params or PasskeySwarParams()


def check_folder_params(out_dir: str | os.PathLike, params: PasskeySwarParams, given: bool = True) -> None:
    """Before writing ``params``' data into ``out_dir``: the folder's split files (if any) were
    generated with the same parameters (its record, or the release's when it has none).
    ``given``: whether the user gave ``--params`` (else ``params`` are the release's defaults).

    Raises:
        DataSourceError: they differ (names the differing fields of both, and expects the
            ``--params`` the folder was made with, e.g. ``--params '{"w": 8}'``, or another folder).
    """
    out_dir = os.fspath(out_dir)
    if not os.path.isdir(out_dir) or not card_files(out_dir):
        return  # nothing written yet (a record alone is rewritten)
    found = read_record(out_dir)
    have = found[0] if found is not None else PasskeySwarParams()
    if have != params:
        old, new = params_diff(have, params)
        where = f"recorded in {found[1]}" if found is not None else 'no params.json: the release\'s, docs/TASK.md "Generation"'
        theirs = {k: v for k, v in have.to_dict().items() if v != params.to_dict()[k]}
        expected = f"--params '{json.dumps(theirs)}'" if found is not None else "no --params (the release's)"
        asked = f"--params {new}" if given else f"the release's {new} (no --params given)"
        raise DataSourceError(
            f"{out_dir} holds data generated with {old} ({where}), not {asked}: one folder holds one "
            f"parameter set; expected {expected} for this folder, or another --out"
        )


def write_params(out_dir: str | os.PathLike, params: PasskeySwarParams) -> str:
    """Write ``DIR/params.json`` (the record read by :func:`read_params`) atomically."""
    path = os.path.join(os.fspath(out_dir), PARAMS_FILE)
    atomic_write_text(path, json.dumps(params.to_dict(), indent=1) + "\n")
    return path
