"""A study file: the protocol of one comparison, as data (``configs/studies/*.yaml``).

A study names the shared budget config, the mechanisms (a mechanism config file and/or a class
path with init args), the learning-rate grid and how it is extended when a pick lands on its
edge, the seeds, the learned-the-task gate, the read-out N and where the records go. ``swar-bench
study run`` turns it into ``swar-bench fit`` / ``test`` commands; the records it writes are the
study's only state.

    name: frontier
    config: configs/results_frontier.yaml
    records: results/frontier_v2
    learning_rates: [3.0e-4, 1.0e-3, 3.0e-3, 1.0e-2]
    extra_learning_rates: {below: [1.0e-4], above: [3.0e-2]}
    selection_seeds: 2
    seeds: 3
    gate: {ar_valid: 0.5, passkey_exact: 0.9}
    readout_n: 256
    code_fingerprint: 5bcec857e4759810   # optional: the training code of its records
    slurm: {partition: gpu, time_min: 240, cpus_per_task: 8, gpus_per_task: 1, mem_gb: 32}
    mechanisms:
      - name: GatedDeltaNet
        config: configs/mechanisms/gated_delta_net.yaml
        seeds: 5
      - name: ScalarDecayLinearAttention_decay0.9_conv4
        config: configs/mechanisms/scalar_decay_linear_attention_decay0.9.yaml
        init_args: {conv_size: 4}
"""

from __future__ import annotations

import dataclasses
import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from swar_bench.study.fields import (
    MAX_SEEDS,
    NAME,
    StudyError,
    _count,
    _fraction,
    _rates,
    _unknown,
    named,
    number,
)
from swar_bench.study.slurm_spec import SlurmSpec, slurm_spec

ADDED = "added"
"""The folder of ``records`` that holds the layers added with ``--add``, one JSON entry each."""
DEFAULT_CURVE_POINTS = 10
"""Validations per fit when the study file gives no ``curve_points`` (every step of a fit of fewer
steps); a ``curve_points`` the file gives above a fit's steps is refused (``commands.read_budget``)."""


@dataclass(frozen=True)
class Gate:
    """The learned-the-task gate: a run is judged at length only if, on validation at the gate N
    (the shortest training N), ``ar_valid >= ar_valid`` **or** ``passkey_exact >= passkey_exact``.

    Either condition alone passes: a mechanism must not be excluded for the very limitation the
    task measures (a short decay loses the passkey within n32 yet recalls live keys; no decay keeps
    the passkey yet blurs overwritten keys). 0.5 is 8x the 1/16 chance of guessing a value;
    0.9 passkey_exact is far above what the all-NULL solution reaches (0)."""

    ar_valid: float = 0.5
    passkey_exact: float = 0.9

    def passes(self, ar_valid: float, passkey_exact: float) -> bool:
        """True when either threshold is reached (NaN reaches none)."""
        return bool(ar_valid >= self.ar_valid or passkey_exact >= self.passkey_exact)


@dataclass(frozen=True)
class MechanismSpec:
    """One point of a study.

    Attributes:
        name: the run-name prefix and table label (letters, digits, ``_ . -``).
        config: a mechanism config file (``configs/mechanisms/*.yaml``), or None with ``class_path``.
        class_path: a mechanism class (``GatedDeltaNet``, ``mypkg.MyLayer``) instead of a config.
        init_args: constructor arguments set on top of the config's (``conv_size: 4``).
        seeds: independent training seeds (0 .. seeds - 1); the study's default when None.
        learning_rates: this mechanism's grid; the study's when None.
        base: this arm's shared budget config instead of the study's ``config`` (the arms of a
            length curriculum differ in their training N and FLOP budget, not in their mechanism).
        learning_rate_from: run at the learning rate another mechanism of the study chose (no
            grid of its own): the arms of one comparison at one rate.
        added: an outside layer added with ``swar-bench study run --add`` (kept in
            ``<records>/added/<name>.json``), not a mechanism of the study file.
    """

    name: str
    config: str | None = None
    class_path: str | None = None
    init_args: dict[str, Any] = field(default_factory=dict)
    seeds: int | None = None
    learning_rates: tuple[float, ...] | None = None
    added: bool = False
    base: str | None = None
    learning_rate_from: str | None = None


@dataclass(frozen=True)
class StudySpec:
    """A parsed study file (see the module docstring); every field has been checked."""

    name: str
    config: str
    records: str
    out: str
    mechanisms: tuple[MechanismSpec, ...]
    learning_rates: tuple[float, ...] = (3e-4, 1e-3, 3e-3, 1e-2)
    extra_below: tuple[float, ...] = (1e-4,)
    extra_above: tuple[float, ...] = (3e-2,)
    selection_seeds: int = 2
    seeds: int = 3
    seed_index_stride: int = 100_000
    curve_points: int | None = None
    gate: Gate = Gate()
    readout_n: int = 256
    retry_steps_factor: int = 3
    compatible_code: tuple[str, ...] = ()
    code_fingerprint: str | None = None
    path: str = ""
    slurm: SlurmSpec = field(default_factory=lambda: SlurmSpec())

    def mechanism(self, name: str) -> MechanismSpec:
        for m in self.mechanisms:
            if m.name == name:
                return m
        raise StudyError(
            f"no mechanism {name!r} in {self.path}; expected one of {', '.join(m.name for m in self.mechanisms)}"
        )

    def seeds_of(self, m: MechanismSpec) -> tuple[int, ...]:
        return tuple(range(m.seeds if m.seeds is not None else self.seeds))

    def base_of(self, m: MechanismSpec) -> str:
        """The shared budget config of ``m``: its ``base``, else the study's ``config``."""
        return m.base or self.config

    def grid_of(self, m: MechanismSpec) -> tuple[float, ...]:
        return tuple(
            sorted(m.learning_rates if m.learning_rates is not None else self.learning_rates)
        )


TOP_KEYS = {
    "name",
    "config",
    "records",
    "out",
    "mechanisms",
    "learning_rates",
    "extra_learning_rates",
    "selection_seeds",
    "seeds",
    "seed_index_stride",
    "curve_points",
    "gate",
    "slurm",
    "readout_n",
    "retry_steps_factor",
    "compatible_code",
    "code_fingerprint",
}
MECHANISM_KEYS = {"name", "config", "class_path", "init_args", "seeds", "learning_rates", "base", "learning_rate_from"}


def pinned_code(value: Any, what: str) -> str | None:
    """The study's ``code_fingerprint`` (the training code its records are judged against,
    ``swar_bench.study.provenance``): None when absent.

    Raises:
        StudyError: not 16 lowercase hex digits (one line naming ``what`` and the value)."""
    from swar_bench.study.provenance import FINGERPRINT_RE

    if value is None:
        return None
    if not isinstance(value, str) or not FINGERPRINT_RE.fullmatch(value):
        raise StudyError(
            f"{what}={value!r} is invalid; expected the 16 lowercase hex digits of a training-code fingerprint "
            "(python -c 'from swar_bench.study import provenance; print(provenance.fingerprint())')"
        )
    return value


STUDY_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_\-]*$")


def study_name(value: Any, where: str) -> str:
    """A study's ``name``: letters, digits, ``_`` and ``-``. No ``.``: the report's
    ``<name>.json`` / ``<name>.md`` go to the records folder by default, where every record is
    ``<run>.<kind>.<ext>`` (two dots at least), so a name without one never writes over a record.

    Raises:
        StudyError: any other name (one line naming it and the rule)."""
    if not isinstance(value, str) or not STUDY_NAME.match(value):
        raise StudyError(
            f"{where}: name={value!r} is invalid; expected letters, digits, '_' and '-' (no '.': the report's "
            "<name>.json goes beside the records <run>.fit.json, <run>.test.json)"
        )
    return value


def retry_factor(value: Any, what: str) -> int:
    """The study's ``retry_steps_factor``: the retry of a non-learner trains this many times the
    steps (and any FLOP budget) of its seed-0 fit, with the same seed and learning rate
    (``commands.fit_args``), so 1 would repeat that fit bit for bit.

    Raises:
        StudyError: not an integer > 1 (one line naming ``what`` and the value)."""
    factor = number(value, integer=True)
    if factor is None or factor <= 1:
        raise StudyError(
            f"{what}={value!r} is invalid; expected an integer > 1 (the retry of a non-learner trains "
            "retry_steps_factor times the steps of its seed-0 fit; 1 would repeat that fit)"
        )
    return factor


def config_class(config: str, where: str) -> tuple[str | None, dict[str, Any]]:
    """``(class_path, init_args)`` of a mechanism config file's ``model.mechanism`` (None, {} when
    it names none).

    Raises:
        StudyError: the file is not YAML, or ``model.mechanism`` is not a mapping (one line)."""
    import yaml

    try:
        raw = yaml.safe_load(Path(config).read_text()) or {}
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as err:
        raise StudyError(
            f"{where}: config={config!r} cannot be read as YAML ({err.__class__.__name__}); expected a "
            "mechanism config"
        ) from None
    mech = (raw.get("model") or {}).get("mechanism") if isinstance(raw, dict) else None
    if mech is None or isinstance(mech, str):
        return mech, {}
    if not isinstance(mech, dict) or not isinstance(mech.get("init_args") or {}, dict):
        raise StudyError(
            f"{where}: config={config!r}: model.mechanism={mech!r} is invalid; expected "
            "{class_path: ..., init_args: {...}}"
        )
    return mech.get("class_path"), dict(mech.get("init_args") or {})


def check_init_args(class_path: str | None, config: str | None, init_args: dict[str, Any], where: str) -> None:
    """Refuse an init arg the mechanism's class does not take, as ``swar-bench fit`` would, but
    when the study is loaded: the class is ``class_path``, else the ``model.mechanism.class_path``
    of ``config``; a class that takes ``**kwargs`` (or that cannot be resolved) is not checked.
    The config file's own init args are checked too.

    Raises:
        StudyError: ``<where>: init_args.n_layer is not an argument of swar_bench.mechanisms.GRU
            (did you mean n_layers?); expected one of vocab_size, d_model, n_layers, mlp_ratio``."""
    from swar_bench.config_errors import class_arguments
    from swar_bench.utils.text import did_you_mean

    given = [("init_args", init_args)]
    if config is not None:
        from_config, config_args = config_class(config, where)
        class_path = class_path or from_config
        given.append((f"config {config}: model.mechanism.init_args", config_args))
    accepted = None if class_path is None else class_arguments(class_path)
    if accepted is None:
        return
    from swar_bench.mechanisms.registry import resolve_class_path

    full = resolve_class_path(str(class_path))
    for label, args in given:
        for key in args:
            if key not in accepted:
                raise StudyError(
                    f"{where}: {label}.{key} is not an argument of {full}{did_you_mean(key, accepted)}; "
                    f"expected one of {', '.join(accepted)}"
                )


def _mechanism(m: Any, at: str) -> MechanismSpec:
    """One checked mechanism entry (of the study file, or of a layer added with ``--add``)."""
    if not isinstance(m, dict):
        raise StudyError(f"{at}={m!r} is invalid; expected a mapping with name and config or class_path")
    _unknown(set(m), MECHANISM_KEYS, named(at, m))
    mname = m.get("name")
    if not isinstance(mname, str) or not NAME.match(mname):
        raise StudyError(f"{at}: name={mname!r} is invalid; expected letters, digits, '_', '.', '-'")
    if not (m.get("config") or m.get("class_path")):
        raise StudyError(f"{at} ({mname}): names no config and no class_path; expected one of them")
    if m.get("config") is not None and not Path(m["config"]).is_file():
        what = "is a folder" if Path(m["config"]).is_dir() else "does not exist"
        raise StudyError(f"{at} ({mname}): config={m['config']!r} {what}; expected a mechanism config (YAML)")
    if m.get("config") and m.get("class_path"):
        raise StudyError(
            f"{at} ({mname}): gives both config and class_path; expected one of them (a config's init_args "
            "belong to its class)"
        )
    if m.get("class_path") is not None:
        from swar_bench.mechanisms.registry import resolve_class

        try:
            resolve_class(m["class_path"], f"{at} ({mname}): class_path")
        except ValueError as err:
            raise StudyError(str(err)) from None
    init_args = m.get("init_args") or {}
    if not isinstance(init_args, dict):
        raise StudyError(f"{at} ({mname}): init_args={init_args!r} is invalid; expected a mapping")
    check_init_args(m.get("class_path"), m.get("config"), init_args, f"{at} ({mname})")
    if m.get("base") is not None and not (isinstance(m["base"], str) and Path(m["base"]).is_file()):
        raise StudyError(f"{at} ({mname}): base={m['base']!r} does not exist; expected a budget config (YAML)")
    source = m.get("learning_rate_from")
    if source is not None and (not isinstance(source, str) or m.get("learning_rates") is not None):
        raise StudyError(
            f"{at} ({mname}): learning_rate_from={source!r} is invalid; expected the name of another "
            "mechanism of the study, and no learning_rates of its own"
        )
    return MechanismSpec(
        name=mname,
        config=m.get("config"),
        class_path=m.get("class_path"),
        init_args=dict(init_args),
        seeds=None if m.get("seeds") is None else _count(m["seeds"], f"{at} ({mname}): seeds", high=MAX_SEEDS),
        learning_rates=None
        if m.get("learning_rates") is None
        else _rates(m["learning_rates"], f"{at} ({mname}): learning_rates"),
        base=m.get("base"),
        learning_rate_from=source,
    )


def load_study(path: str | Path) -> StudySpec:
    """Read and check a study file.

    Raises:
        StudyError: the file is missing or not YAML, a key is unknown (named, with the closest
            known key), a value has the wrong type or range (``retry_steps_factor`` <= 1), a
            mechanism names neither or a missing config, an init arg its class does not take
            (:func:`check_init_args`), two mechanisms share a name; one line each.
    """
    import yaml

    path = Path(path)
    try:
        raw = yaml.safe_load(path.read_text())
    except FileNotFoundError:
        raise StudyError(
            f"study file {str(path)!r} does not exist; expected a YAML file such as configs/studies/frontier.yaml"
        ) from None
    except (OSError, UnicodeDecodeError) as err:
        raise StudyError(
            f"study file {str(path)!r} cannot be read ({err.__class__.__name__})"
        ) from None
    except yaml.YAMLError as err:
        mark = getattr(err, "problem_mark", None)
        where = f" at line {mark.line + 1}" if mark is not None else ""
        raise StudyError(f"study file {str(path)!r} is not valid YAML{where}") from None
    where = str(path)
    if not isinstance(raw, dict):
        raise StudyError(
            f"{where}: expected a YAML mapping with name, config, records and mechanisms"
        )
    _unknown(set(raw), TOP_KEYS, where)
    for key in ("name", "config", "records", "mechanisms"):
        if key not in raw:
            raise StudyError(
                f"{where}: {key!r} is missing; expected name, config, records and mechanisms"
            )
    name = study_name(raw["name"], where)
    for key in ("config", "records", "out"):
        if key in raw and (not isinstance(raw[key], str) or not raw[key].strip()):
            raise StudyError(f"{where}: {key}={raw[key]!r} is invalid; expected a path")
    if not Path(raw["config"]).is_file():
        what = "is a folder" if Path(raw["config"]).is_dir() else "does not exist"
        raise StudyError(f"{where}: config={raw['config']!r} {what}; expected the shared budget config (YAML)")
    if Path(raw["records"]).exists() and not Path(raw["records"]).is_dir():
        raise StudyError(f"{where}: records={raw['records']!r} is a file; expected a folder for the records")
    extra = raw.get("extra_learning_rates", {"below": [1e-4], "above": [3e-2]})
    if not isinstance(extra, dict):
        raise StudyError(
            f"{where}: extra_learning_rates={extra!r} is invalid; expected {{below: [...], above: [...]}}"
        )
    _unknown(set(extra), {"below", "above"}, f"{where}: extra_learning_rates")
    gate_raw = raw.get("gate", {})
    if not isinstance(gate_raw, dict):
        raise StudyError(
            f"{where}: gate={gate_raw!r} is invalid; expected {{ar_valid: 0.5, passkey_exact: 0.9}}"
        )
    _unknown(set(gate_raw), {"ar_valid", "passkey_exact"}, f"{where}: gate")
    gate = Gate(**{k: _fraction(v, f"{where}: gate.{k}") for k, v in gate_raw.items()})
    mechs_raw = raw["mechanisms"]
    if not isinstance(mechs_raw, list) or not mechs_raw:
        raise StudyError(f"{where}: mechanisms={mechs_raw!r} is invalid; expected a non-empty list")
    mechs = [_mechanism(m, f"{where}: mechanisms[{i}]") for i, m in enumerate(mechs_raw)]
    added = Path(raw["records"]) / ADDED
    for file in sorted(added.glob("*.json")) if added.is_dir() else []:
        try:
            entry = json.loads(file.read_text())
        except (OSError, json.JSONDecodeError):
            raise StudyError(f"{file}: not a JSON mechanism entry; delete it or add the layer again") from None
        mechs.append(dataclasses.replace(_mechanism(entry, str(file)), added=True))
    names = [m.name for m in mechs]
    dupes = sorted({n for n in names if names.count(n) > 1})
    if dupes:
        raise StudyError(
            f"{where}: mechanism name {dupes[0]!r} appears twice; expected distinct names"
        )
    by_name = {m.name: m for m in mechs}
    for m in mechs:
        source = by_name.get(m.learning_rate_from) if m.learning_rate_from else None
        if m.learning_rate_from and (source is None or source is m or source.learning_rate_from):
            raise StudyError(
                f"{where}: {m.name}: learning_rate_from={m.learning_rate_from!r} is invalid; expected another "
                "mechanism of the study that chooses its own rate"
            )
    spec = StudySpec(
        name=name,
        config=raw["config"],
        records=raw["records"],
        out=raw.get("out", f"runs/study_{name}"),
        mechanisms=tuple(mechs),
        learning_rates=_rates(
            raw.get("learning_rates", [3e-4, 1e-3, 3e-3, 1e-2]), f"{where}: learning_rates"
        ),
        extra_below=_rates(
            extra.get("below", []), f"{where}: extra_learning_rates.below", allow_empty=True
        ),
        extra_above=_rates(
            extra.get("above", []), f"{where}: extra_learning_rates.above", allow_empty=True
        ),
        selection_seeds=_count(raw.get("selection_seeds", 2), f"{where}: selection_seeds", high=MAX_SEEDS),
        seeds=_count(raw.get("seeds", 3), f"{where}: seeds", high=MAX_SEEDS),
        seed_index_stride=_count(
            raw.get("seed_index_stride", 100_000), f"{where}: seed_index_stride"
        ),
        curve_points=(
            None if raw.get("curve_points") is None else _count(raw["curve_points"], f"{where}: curve_points")
        ),
        gate=gate,
        readout_n=_count(raw.get("readout_n", 256), f"{where}: readout_n"),
        retry_steps_factor=retry_factor(raw.get("retry_steps_factor", 3), f"{where}: retry_steps_factor"),
        compatible_code=tuple(str(c) for c in (raw.get("compatible_code") or [])),
        code_fingerprint=pinned_code(raw.get("code_fingerprint"), f"{where}: code_fingerprint"),
        path=where,
        slurm=slurm_spec({} if raw.get("slurm") is None else raw["slurm"], f"{where}: slurm"),
    )
    for m in spec.mechanisms:
        if spec.selection_seeds > len(spec.seeds_of(m)):
            raise StudyError(
                f"{where}: {m.name} has {len(spec.seeds_of(m))} seed(s) but selection_seeds={spec.selection_seeds}; "
                "expected at least as many seeds as the learning-rate choice uses"
            )
        if len(spec.seeds_of(m)) * spec.seed_index_stride > 10**6:
            raise StudyError(
                f"{where}: {m.name}: {len(spec.seeds_of(m))} seeds x seed_index_stride={spec.seed_index_stride} "
                "exceed the 1,000,000 indices of the task's seed formula; expected fewer seeds or a smaller stride"
            )
    from swar_bench.study.config_files import refuse_config_typos

    # a typo fails every fit: refused here
    refuse_config_typos([spec.config, *(spec.base_of(m) for m in mechs), *(m.config for m in mechs)], where)
    return spec
