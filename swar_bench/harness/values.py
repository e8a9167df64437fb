"""Checks of option values that the run's libraries refuse later without naming the option: numpy
a negative ``--data.seed`` ("expected non-negative integer"), torch's Adam a beta outside [0, 1)
("Invalid beta parameter at index 1: 1.5"), Lightning a ``--seed_everything`` outside numpy's
seeds or an integer ``--trainer.*`` option out of range ("`max_steps` must be a non-negative
integer or -1", ``TRAINER_INTEGERS``, ``--trainer.limit_*_batches``, ``--trainer.devices``), the
MQAR cache a ``--data.mqar.cache_dir`` below a file ("File exists"), some of them only once
training starts. ``check_values`` refuses each before anything is built or written, in one
line naming the option (or the ``--config`` file that set it), the value and what was expected;
``mqar_option_line`` leads a refusal of ``MQARData`` (``MQAR seed=-1: ...``) with its option.
"""

from __future__ import annotations

import math
import numbers
import os
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

from swar_bench.config_errors import option_source
from swar_bench.utils.argparsing import TORCH_MAX_SEED
from swar_bench.utils.files import nearest_existing
from swar_bench.utils.type_lines import spelled as shown  # as the command line spells a value

NUMPY_MAX_SEED = 2**32 - 1
"""The largest seed ``lightning.seed_everything`` takes (numpy's legacy ``np.random.seed``)."""


def _integer_in(value: Any, low: int, high: int) -> bool:
    return isinstance(value, numbers.Integral) and not isinstance(value, bool) and low <= int(value) <= high


def _number(value: Any) -> bool:
    return isinstance(value, numbers.Real) and not isinstance(value, bool) and math.isfinite(float(value))


def _seed_everything(value: Any) -> str | None:
    if value is None or isinstance(value, bool) or _integer_in(value, 0, NUMPY_MAX_SEED):
        return None
    return f"true, false or an integer in [0, {NUMPY_MAX_SEED}] (numpy's seeds)"


def _data_seed(value: Any) -> str | None:
    return None if _integer_in(value, 0, TORCH_MAX_SEED) else f"an integer in [0, {TORCH_MAX_SEED}]"


def _betas(value: Any) -> str | None:
    pair = isinstance(value, (list, tuple)) and len(value) == 2
    if pair and all(_number(b) and 0.0 <= float(b) < 1.0 for b in value):
        return None
    return "two numbers in [0, 1) (Adam's beta1 and beta2, e.g. [0.9, 0.95])"


def _weight_decay(value: Any) -> str | None:
    return None if _number(value) and float(value) >= 0 else "a finite number >= 0"


def _max_steps(value: Any) -> str | None:
    return None if value is None or _integer_in(value, 1, 2**63 - 1) else "null (trainer.max_steps) or an integer >= 1"


def _folder(value: Any) -> str | None:
    if value is None:
        return None
    if not isinstance(value, (str, os.PathLike)) or os.fspath(value) == "":
        return "a folder path or null"
    text = os.fspath(value)
    if "://" in text:
        return None
    target = Path(os.path.abspath(text))
    existing = nearest_existing(target)
    if existing.is_dir():
        return None
    shown = "it is a file" if existing == target else f"{existing} is a file"
    return f"a folder path or null ({shown})"


MAX_TIME_EXPECTED = "DD:HH:MM:SS (e.g. 00:12:00:00) or a mapping of timedelta arguments (e.g. {hours: 12})"
TIMEDELTA_KEYS = ("weeks", "days", "hours", "minutes", "seconds", "milliseconds", "microseconds")


def _max_time(value: Any) -> str | None:
    """What Lightning's ``Timer`` takes as ``--trainer.max_time``: null, ``DD:HH:MM:SS`` (four
    integers), a mapping of ``datetime.timedelta`` arguments, or a ``timedelta``."""
    import datetime

    if value is None or isinstance(value, datetime.timedelta):
        return None
    if isinstance(value, str) and re.fullmatch(r"\s*\d+:\d+:\d+:\d+\s*", value):
        return None
    if isinstance(value, dict) and value and all(k in TIMEDELTA_KEYS and _number(v) and v >= 0 for k, v in value.items()):
        return None
    return MAX_TIME_EXPECTED


PROFILERS = ("simple", "advanced", "pytorch", "xla")
"""The profiler names Lightning's ``Trainer(profiler=...)`` takes."""


def _profiler(value: Any) -> str | None:
    """A name of ``PROFILERS`` (a ``Profiler`` class reaches here parsed, not as a string)."""
    from swar_bench.utils.text import did_you_mean

    if not isinstance(value, str) or value in PROFILERS:
        return None
    return f"one of {', '.join(PROFILERS)} or a Profiler class path{did_you_mean(value, PROFILERS)}"


def _fast_dev_run(value: Any) -> str | None:
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value >= 0:
        return None
    return "true, false or a number of batches >= 0"


def _at_least(low: int, expected: str, null: bool = False, bounded: bool = True) -> Callable[[Any], str | None]:
    """The check of an integer option that takes ``low`` or more, and null when ``null``. With
    ``bounded`` (the default) at most 2**63 - 1, torch's and Lightning's 64-bit counters, named in
    the refusal of a value above it (``..., at most 2**63 - 1``); without, any larger integer."""
    high = 2**63 - 1 if bounded else float("inf")

    def check(value: Any) -> str | None:
        if (null and value is None) or _integer_in(value, low, high):
            return None
        above = isinstance(value, numbers.Integral) and not isinstance(value, bool) and value > high
        return f"{expected}, at most 2**63 - 1" if above else expected

    return check


TRAINER_INTEGERS = {
    "max_steps": _at_least(-1, "-1 (no limit) or an integer >= 0"),
    "max_epochs": _at_least(-1, "null, -1 (no limit) or an integer >= 0", null=True),
    "min_steps": _at_least(0, "null or an integer >= 0", null=True),
    "min_epochs": _at_least(0, "null or an integer >= 0", null=True),
    "log_every_n_steps": _at_least(0, "null or an integer >= 0 (0: never)", null=True),
    "accumulate_grad_batches": _at_least(1, "an integer >= 1"),
    "check_val_every_n_epoch": _at_least(1, "null or an integer >= 1", null=True),
    "num_sanity_val_steps": _at_least(-1, "null, -1 (every validation batch) or an integer >= 0", null=True),
    "num_nodes": _at_least(1, "an integer >= 1"),
    "reload_dataloaders_every_n_epochs": _at_least(0, "an integer >= 0"),
}
"""Integer ``--trainer.*`` options and their checks: Lightning refuses a value out of range (some
only once training starts) in words that name the argument, not the option, or not at all."""

BATCH_LIMIT_EXPECTED = "null, a number of batches (an integer >= 0) or a fraction in [0.0, 1.0]"


def _batch_limit(value: Any) -> str | None:
    """``--trainer.limit_*_batches`` and ``overfit_batches`` as Lightning takes them: a number of
    batches, a fraction of them, or a float that is a whole number of batches (``2.0``)."""
    if value is None or _integer_in(value, 0, 2**63 - 1):
        return None
    if _number(value) and not isinstance(value, numbers.Integral) and (0 <= value <= 1 or (value > 1 and value % 1 == 0)):
        return None
    return BATCH_LIMIT_EXPECTED


VAL_CHECK_EXPECTED = "training batches between validations (an integer >= 1) or a fraction of an epoch in (0, 1]"


def _val_check_interval(value: Any) -> str | None:
    """Training batches between validations (``>= 1``), a fraction of an epoch in (0, 1], or a time
    (Lightning's ``DD:HH:MM:SS``, a mapping of timedelta arguments)."""
    import datetime

    if value is None or isinstance(value, (str, dict, datetime.timedelta)):
        return None if _max_time(value) is None else f"{VAL_CHECK_EXPECTED}, or a time: {MAX_TIME_EXPECTED}"
    return None if _batch_limit(value) is None and value > 0 else VAL_CHECK_EXPECTED


DEVICES_EXPECTED = "auto, -1 (every device), a number of devices >= 1 or a list of device indices (e.g. [0, 1])"


def _devices(value: Any) -> str | None:
    """``--trainer.devices`` as Lightning takes it: ``auto``, -1 (every device), a number of devices,
    device indices (a list, or a string such as ``"0,1"``); never 0, ``"0"`` or ``[]``."""
    if isinstance(value, str):
        text = value.strip()
        indices = re.fullmatch(r"\d+(\s*,\s*\d+)*\s*,?", text) is not None
        return None if text in ("auto", "-1") or (indices and text != "0") else DEVICES_EXPECTED
    if isinstance(value, (list, tuple)):
        return None if value and all(_integer_in(v, 0, 2**31 - 1) for v in value) else DEVICES_EXPECTED
    return None if value is None or value == -1 or _integer_in(value, 1, 2**63 - 1) else DEVICES_EXPECTED


def _gap_bins(value: Any) -> str | None:
    """``--mqar_accuracy.gap_bin_upper``: strictly increasing integer gaps >= 1 (``MQARAccuracy``)."""
    expected = "strictly increasing integer gaps >= 1, e.g. [4, 16, 64]"
    if not isinstance(value, (list, tuple)) or not value or not all(_integer_in(v, 1, 2**63 - 1) for v in value):
        return expected
    import itertools

    return None if all(a < b for a, b in itertools.pairwise(value)) else expected


def _writes_values(value: Any) -> str | None:
    """``--accuracy.n_writes_values`` / ``--calibration.n_writes_values``: positive integer N."""
    ok = isinstance(value, (list, tuple)) and value and all(_integer_in(v, 1, 2**63 - 1) for v in value)
    return None if ok else "a non-empty list of positive integers N, e.g. [32, 64]"


CALLBACK_CHECKS: dict[str, Callable[[Any], str | None]] = {
    "calibration.n_bins": _at_least(1, "an integer >= 1"),
    "calibration.n_permutations": _at_least(1, "an integer >= 1"),
    "calibration.permutation_seed": _at_least(0, "an integer >= 0 (numpy's seeds)", bounded=False),
    "calibration.n_writes_values": _writes_values,
    "accuracy.n_writes_values": _writes_values,
    "mqar_accuracy.gap_bin_upper": _gap_bins,
}
"""The evaluation callbacks' options (``--calibration.*``, ``--accuracy.*``, ``--mqar_accuracy.*``):
their constructors refuse a bad value naming the argument only, or (a seed) not until the reports
are written at the end of a test, after the run folder's older reports were replaced."""

BATCH_LIMITS = ("limit_train_batches", "limit_val_batches", "limit_test_batches", "limit_predict_batches",
                "overfit_batches")
"""The ``--trainer`` options whose int is a number of batches and whose float a fraction of them."""


CHECKS: dict[str, Callable[[Any], str | None]] = {
    **CALLBACK_CHECKS,
    **{f"trainer.{option}": check for option, check in TRAINER_INTEGERS.items()},
    **{f"trainer.{option}": _batch_limit for option in BATCH_LIMITS},
    "trainer.val_check_interval": _val_check_interval,
    "trainer.devices": _devices,
    "trainer.profiler": _profiler,
    "trainer.fast_dev_run": _fast_dev_run,
    "seed_everything": _seed_everything,
    "data.seed": _data_seed,
    "data.mqar.cache_dir": _folder,
    "model.betas": _betas,
    "model.weight_decay": _weight_decay,
    "model.max_steps": _max_steps,
    "trainer.max_time": _max_time,
}
"""Dotted option -> its check: None for a good value, else what was expected."""


def expected_tail(option: str, subcommand: str | None = None) -> str | None:
    """What follows ``--option=value`` in the refusal of ``option`` (``utils.type_lines.Expected``): the
    check of ``CHECKS`` (``NO_STEP`` for a ``fit``), or ``TBPTTModule``'s of a ``model.*``
    argument; None for another option. For a value of the wrong type, said as its range is."""
    if subcommand == "fit" and option in NO_STEP:
        return f": expected {NO_STEP[option]}"
    if option in CHECKS:
        try:
            expected = CHECKS[option](object())  # a value no check takes: its expectation
        except TypeError:
            expected = None
        return f": expected {expected}" if expected else None
    if option.startswith("model."):
        from swar_bench.module import EXPECTED

        return EXPECTED.get(option.removeprefix("model."))
    return None


def lookup(cfg: Any, option: str) -> tuple[bool, Any]:
    """``(found, value)`` of the dotted ``option`` in the parsed config ``cfg`` (a jsonargparse
    Namespace whose values may be plain dicts, ``data.mqar``)."""
    node = cfg
    for part in option.split("."):
        try:
            if hasattr(node, "__contains__") and part not in node:
                return False, None
            node = node[part] if isinstance(node, dict) else node.get(part)
        except (KeyError, AttributeError, TypeError):
            return False, None
    return True, node


def lead(argv: list[str], option: str, value: Any) -> str:
    """``--option=value`` (a scalar as typed in ``argv``), or ``--config=/abs/run.yaml: option=value``
    when the value was read from a ``--config`` file of ``argv`` (``config_errors.option_source``)."""
    source = option_source(argv, option, shown(value)) or option_source(argv, option, str(value))
    if source:
        return f"{source}: {option}={shown(value)}"
    typed = typed_value(argv, option)  # a scalar as typed: -1, not the parsed -1.0 of an int-or-float option
    return f"--{option}={typed if typed is not None and not typed.lstrip().startswith(('[', '{')) else shown(value)}"


def check_values(cfg: Any, argv: list[str], subcommand: str | None = None) -> None:
    """Raise ValueError (one line: the option, its value and what was expected, ``lead``) for the
    first value of ``CHECKS`` that ``cfg`` (the subcommand's parsed config) holds and its check
    refuses; ``argv``: the command line, to name the ``--config`` file a value came from. A ``fit``
    states the range it takes of the options of ``NO_STEP`` (no 0: ``check_trains``)."""
    for option, check in CHECKS.items():
        found, value = lookup(cfg, option)
        expected = check(value) if found else None
        if expected is not None and subcommand == "fit" and option in NO_STEP:
            expected = NO_STEP[option] + (", at most 2**63 - 1" if expected.endswith(", at most 2**63 - 1") else "")
        if expected is not None:
            raise ValueError(f"{lead(argv, option, value)}: expected {expected}")
    line = _uncovered_n(cfg, argv, subcommand)
    if line is not None:
        raise ValueError(line)
    from swar_bench.harness.class_values import class_arg_problem

    line = class_arg_problem(cfg, argv)  # init args of loggers and callbacks the parser passes unchecked
    if line is not None:
        raise ValueError(line)


EVALUATED = {"fit": ("data.val_configs",), "validate": ("data.val_configs",), "test": ("data.test_configs",),
             "predict": ("data.test_configs",)}
"""The N a subcommand evaluates, by its data option (predict reads the test configs)."""


def _uncovered_n(cfg: Any, argv: list[str], subcommand: str | None) -> str | None:
    """One line when ``--accuracy.n_writes_values`` / ``--calibration.n_writes_values`` (the rows
    of their tables) leave out an N the subcommand evaluates (``EVALUATED``, a passkey run): the
    callback would stop the run at that N's first batch. None otherwise."""
    from swar_bench.tasks.passkey_swar import ALLOWED_N
    from swar_bench.tasks.store.layout import parse_config

    found, task = lookup(cfg, "data.task")
    if found and task not in (None, "passkey_swar"):
        return None
    evaluated: list[int] = []
    keys = EVALUATED.get(subcommand or "", ())
    for key in keys:
        present, configs = lookup(cfg, key)
        for config in configs if present and isinstance(configs, (list, tuple)) else ():
            try:
                evaluated.append(int(config) if isinstance(config, int) else parse_config(str(config)))
            except (TypeError, ValueError):
                return None  # the data module names a bad N itself
            if evaluated[-1] not in ALLOWED_N:
                return None  # n65: the data module's own line ('not an allowed N') names it first
    for option in ("accuracy.n_writes_values", "calibration.n_writes_values"):
        present, values = lookup(cfg, option)
        if not present or values is None or _writes_values(values) is not None:
            continue
        missing = sorted(set(evaluated) - {int(v) for v in values})
        if missing:
            return (f"{lead(argv, option, values)}: leaves out N={', '.join(map(str, missing))} of "
                    f"{' / '.join(keys)}; expected every N the run evaluates")
    return None


NO_STEP = {
    "trainer.max_steps": "-1 (no limit) or an integer >= 1",
    "trainer.max_epochs": "null, -1 (no limit) or an integer >= 1",
    "trainer.limit_train_batches": "null, a number of batches >= 1 or a fraction in (0.0, 1.0]",
}
"""The ``--trainer.*`` options whose 0 makes Lightning's fit loop stop before its first batch
(``max_steps`` / ``max_epochs`` reached, ``limit_train_batches`` 0: the loop is skipped), and what
a fit expects of each instead. ``--trainer.max_time`` of zero (``00:00:00:00``) is refused too."""


def check_trains(cfg: Any, argv: list[str]) -> None:
    """Raise ValueError (one line, ``lead``) when ``cfg`` (a ``fit``'s parsed config) sets an option
    of ``NO_STEP`` to 0: Lightning would accept it, train no step, save no checkpoint and leave a
    run folder holding only its config. ``--trainer.fast_dev_run`` (a number of batches, or true)
    overrides all three, so a fit with it passes."""
    found, fast = lookup(cfg, "trainer.fast_dev_run")
    if found and fast is not None and fast is not False and fast != 0:
        return
    for option, expected in NO_STEP.items():
        found, value = lookup(cfg, option)
        if found and _number(value) and value == 0:
            raise ValueError(f"{lead(argv, option, value)}: a fit that trains no step; expected {expected}")
    found, value = lookup(cfg, "trainer.max_time")
    if found and value is not None and _max_time(value) is None and _seconds(value) == 0:
        raise ValueError(f"{lead(argv, 'trainer.max_time', value)}: a fit that trains no step (Lightning's Timer stops "
                         f"it before the first batch); expected null or a time above zero, {MAX_TIME_EXPECTED}")


def _seconds(value: Any) -> float:
    """The seconds of a ``--trainer.max_time`` that ``_max_time`` takes (``DD:HH:MM:SS``, a mapping
    of timedelta arguments, a timedelta)."""
    import datetime

    if isinstance(value, datetime.timedelta):
        return value.total_seconds()
    if isinstance(value, dict):
        return datetime.timedelta(**value).total_seconds()
    days, hours, minutes, seconds = (int(part) for part in value.strip().split(":"))
    return datetime.timedelta(days=days, hours=hours, minutes=minutes, seconds=seconds).total_seconds()


def mqar_option_line(message: str, cfg: Any, argv: list[str]) -> str | None:
    """``MQAR seed=-1: expected ...`` (``MQARData``'s and ``MQARParams``' refusals) led by the
    option it is (``--data.mqar.train_seed=-1: expected ...``; a segment's ``seed`` /
    ``num_examples`` is the ``train_`` or ``test_`` field holding that value), else None."""
    match = re.match(r"MQAR (\w+)=(.*?): (expected .*)$", message)
    found, mqar = lookup(cfg, "data.mqar")
    if match is None or not found:
        return None
    name, text, rest = match.groups()
    fields = dict(mqar) if isinstance(mqar, dict) else {}
    typed = [k for k in ("num_kv_pairs", "num_passes") if typed_value(argv, f"data.mqar.{k}") is not None]
    if name == "input_seq_len" and "num_kv_pairs=" in rest and typed and "input_seq_len" in fields and (
            typed_value(argv, "data.mqar.input_seq_len") is None):  # the pairs just typed, the length from a file
        length, passes = int(fields["input_seq_len"]), int(fields.get("num_passes", 1))
        return (f"{lead(argv, f'data.mqar.{typed[-1]}', fields[typed[-1]])}: expected num_kv_pairs x "
                f"(2 x num_passes + 2) <= input_seq_len={length} (at most {length // (2 * passes + 2)} pairs at "
                f"num_passes={passes}), or a longer --data.mqar.input_seq_len")
    candidates = [name] if name in fields else [
        k for k in fields if re.sub(r"(^|_)(train|test)_", r"\1", k) == name
    ]
    chosen = next((k for k in candidates if text in (repr(fields[k]), str(fields[k]))), candidates[0] if candidates else None)
    if chosen is None:
        return None
    return f"{lead(argv, f'data.mqar.{chosen}', fields[chosen])}: {rest}"


DATA_LISTS = ("train_configs", "val_configs", "test_configs")
"""``PasskeySwarDataModule`` options whose refusals start with the bare name (``train_configs: 33
is not an allowed N; ...``)."""


def typed_value(argv: list[str], option: str) -> str | None:
    """The value of the last ``--option=V`` / ``--option V`` of ``argv`` as typed, else None."""
    found = None
    for i, arg in enumerate(argv):
        name, eq, value = arg.partition("=")
        if name == f"--{option}":
            found = value if eq else (argv[i + 1] if i + 1 < len(argv) else None)
    return found


def bad_element(text: str, expected: str) -> str | None:
    """``element 3.5 is not an allowed N; <expected>`` for the first element of the list ``text``
    (``[3.5]``, ``[[32]]``) that names no allowed N (``config_errors.allowed_n``), else None."""
    import yaml

    from swar_bench.config_errors import allowed_n as reads_as_n
    from swar_bench.tasks.passkey_swar import ALLOWED_N

    def allowed_n(item: Any) -> bool:
        return reads_as_n(item) and int(str(item).strip().lstrip("nN")) in ALLOWED_N

    try:
        items = yaml.safe_load(text)
    except yaml.YAMLError:
        return None
    bad = next((item for item in items if not allowed_n(item)), None) if isinstance(items, list) else None
    return None if bad is None else f"element {shown(bad)} is not an allowed N; {expected}"


def option_line(message: str, argv: list[str]) -> str:
    """A one-line refusal that names an option, led by where it was set as the user typed it:
    ``train_configs: 33 is not an allowed N; ...`` becomes ``--data.train_configs=[33]: 33 is not
    ...`` (the data module names its option bare), and ``--data.source=X: ...`` of an option set
    by a ``--config`` file of ``argv`` becomes ``--config=/abs/run.yaml: data.source=X: ...``
    (``config_errors.option_source``). Other messages are returned unchanged."""
    bare = re.match(rf"({'|'.join(DATA_LISTS)}): (.*)$", message, re.DOTALL)
    if bare is not None:
        option, rest = f"data.{bare.group(1)}", bare.group(2)
        whole = re.match(r"'(\[.*\])' is not an allowed N; (.*)$", rest, re.DOTALL)
        if whole is not None:  # a list whose elements are not Ns reached the data module as one string
            rest = bad_element(whole.group(1), whole.group(2)) or rest
        source = option_source(argv, option)
        if source is not None:
            return f"{source}: {option}: {rest}"
        typed = typed_value(argv, option)
        return f"--{option}={typed}: {rest}" if typed is not None else f"--{option}: {rest}"
    flagged = re.match(r"--([A-Za-z_][\w.]*)=(.*)$", message, re.DOTALL)
    if flagged is not None and typed_value(argv, flagged.group(1)) is None:
        source = option_source(argv, flagged.group(1))
        if source is not None:
            return f"{source}: {message[2:]}"
    return message


def integer_batch_limits(cfg: Any, argv: list[str]) -> dict[str, int]:
    """The ``BATCH_LIMITS`` of ``cfg`` the user wrote as integers, as ints (Trainer keyword
    arguments): jsonargparse reads Lightning's ``Union[int, float]`` as a float, so
    ``--trainer.limit_val_batches=1`` (one batch) reached the Trainer as ``1.0`` (every batch).
    The setting read last (the command line's words, a ``--config`` file's or a ``--trainer``
    file's YAML) decides; a typed ``1.0`` stays a fraction."""
    import yaml

    from swar_bench.utils.yaml_keys import load_unique

    ints = {}
    for option in BATCH_LIMITS:
        key = f"trainer.{option}"
        found, value = lookup(cfg, key)
        if not found or not isinstance(value, float) or not value.is_integer():
            continue
        as_int = False
        for i, arg in enumerate(argv):
            name, eq, text = arg.partition("=")
            text = text if eq else (argv[i + 1] if i + 1 < len(argv) else "")
            if name == f"--{key}":
                as_int = re.fullmatch(r"\s*[+-]?\d+\s*", text) is not None
            elif name in ("--config", "--trainer") and os.path.isfile(text):
                try:
                    with open(text, encoding="utf-8") as handle:
                        loaded = load_unique(handle)
                except (OSError, ValueError, yaml.YAMLError):
                    continue
                node = loaded.get("trainer", {}) if name == "--config" and isinstance(loaded, dict) else loaded
                if isinstance(node, dict) and option in node:
                    as_int = isinstance(node[option], int) and not isinstance(node[option], bool)
        if as_int:
            ints[option] = int(value)
    return ints
