"""Checks of the Lightning command line's options before anything is built or written, each
refusal one line (ValueError): mechanism names resolved (``resolve_mechanism_names``), every
``--config`` file a YAML mapping (``check_config_files``), output folders writable
(``check_output_folder``), ``--trainer.accelerator`` present on this machine
(``check_accelerator``) and a fit with something to train (``check_trainable``)."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

import torch

from swar_bench.config_errors import option_source as _option_source
from swar_bench.harness.run_folders import rank_zero
from swar_bench.mechanisms.registry import check_mechanism_class  # noqa: F401 - imported from here too
from swar_bench.module import TBPTTModule, mechanism_class_path
from swar_bench.utils.argparsing import check_path_given
from swar_bench.utils.files import PROBE_PREFIX, name_limits, nearest_existing, probe_write
from swar_bench.utils.option_table import GROUPS
from swar_bench.utils.text import inline_mapping, shown_yaml, yaml_problem


def resolve_mechanism_names(argv: list[str]) -> list[str]:
    """``--model.mechanism=GRU`` -> ``--model.mechanism=swar_bench.mechanisms.GRU`` (the one
    resolver of every command, ``swar_bench.mechanisms.registry``): zoo names first (``GRU`` is
    never ``torch.nn.GRU``), dotted class paths imported; ValueError (one line) otherwise."""
    from swar_bench.mechanisms.registry import replaced_init_args, rewrite_mechanism_args

    resolved = rewrite_mechanism_args(argv, "--model.mechanism")
    for line in replaced_init_args(argv, "--model.mechanism"):
        print(f"swar-bench: warning: {line}", file=sys.stderr)
    return resolved


def check_nested_options(argv: list[str]) -> None:
    """Raise ValueError (one line naming each option and the closest key) when ``argv`` sets a key
    of a mapping option that is none of its fields (``--data.mqar.num_kv_pair=8``,
    ``swar_bench.harness.fast_options.NESTED``): the parser passes such a mapping on unchecked, and
    the data module's refusal would name the ``--config`` file that set the mapping."""
    from swar_bench.harness.fast_options import unknown_options_line

    line = unknown_options_line(argv, nested_only=True)
    if line is not None:
        raise ValueError(line)


def nested_class_paths(node: Any) -> list[str]:
    """The class paths of a mechanism config and of the mechanisms it wraps (an init arg named
    ``mechanism`` holding a ``class_path``), outermost first; ``[]`` without a class path."""
    paths: list[str] = []
    while node is not None and len(paths) < 8:
        is_dict = isinstance(node, dict)
        class_path = node.get("class_path") if is_dict else getattr(node, "class_path", None)
        if not class_path:
            break
        paths.append(str(class_path))
        args = node.get("init_args") if is_dict else getattr(node, "init_args", None)
        node = args.get("mechanism") if args is not None and hasattr(args, "get") else None
    return paths


def check_output_folder(path: str | os.PathLike, flag: str) -> None:
    """Raise ValueError (one line naming ``flag`` and ``path``) unless the folder ``path`` exists
    and is writable or can be created; leaves nothing behind (it rehearses an atomic write,
    ``swar_bench.utils.files.probe_write``, in ``path`` or in its nearest existing parent). Remote paths (``scheme://``) are not checked."""
    text = os.fspath(path)
    check_path_given(flag, text, "a folder path")  # "" would be the current folder
    if "://" in text:
        return
    target = Path(os.path.abspath(text))
    probe = nearest_existing(target)
    if not probe.is_dir():
        raise ValueError(f"{flag}={text}: the folder cannot be created ({probe} is not a folder); expected a folder "
                         "path that is not under a file")
    name_max = name_limits(probe)[0]
    too_long = [part for part in target.relative_to(probe).parts if len(os.fsencode(part)) > name_max]
    if too_long:
        raise ValueError(
            f"{flag}={text[:80]}... ({len(text)} characters): the folder cannot be created (a name of "
            f"{len(os.fsencode(too_long[0]))} bytes; the file system allows {name_max}); expected shorter names"
        )
    try:
        probe_write(probe, prefix=PROBE_PREFIX)
    except OSError as err:
        verb = "written" if probe == target else "created"
        raise ValueError(f"{flag}={text}: the folder cannot be {verb} ({err.strerror or err}); expected a "
                         "writable folder") from None


DEVICE_NAMES = {"gpu": "CUDA or MPS", "cuda": "CUDA", "mps": "MPS", "tpu": "TPU (torch_xla)"}
"""What each accelerator name of Lightning's needs, as a refusal names it."""


def usable_accelerators() -> list[str]:
    """The ``--trainer.accelerator`` names Lightning accepts that have a device on this machine:
    ``auto``, then each of its registry's whose ``is_available()`` is true (``cpu`` always), and
    ``gpu`` when CUDA or MPS is."""
    from lightning.pytorch.accelerators import AcceleratorRegistry

    names = sorted(AcceleratorRegistry.available_accelerators())
    usable = [n for n in names if n == "cpu" or AcceleratorRegistry[n]["accelerator"].is_available()]
    gpu = [] if not ({"cuda", "mps"} & set(usable)) else ["gpu"]
    return ["auto", *usable, *gpu]


def check_accelerator(accelerator: Any, argv: list[str]) -> None:
    """Raise ValueError (one line naming the option, its value and where it was set: the command
    line or a ``--config`` file of ``argv``) when ``--trainer.accelerator`` names no accelerator
    of Lightning's (``tpuu``: with the name meant, and the names it takes) or one this machine
    has no device for: ``gpu`` without CUDA or MPS, ``cuda`` without CUDA
    (``torch.cuda.is_available``), ``mps``, ``tpu`` without torch_xla. Lightning would otherwise
    stop with "No supported gpu backend found!", its own unnamed line, or (``tpu``) a traceback
    of the missing torch_xla. An ``Accelerator`` instance is not checked."""
    if not isinstance(accelerator, str):
        return
    from lightning.pytorch.accelerators import AcceleratorRegistry

    from swar_bench.utils.text import did_you_mean

    source = _option_source(argv, "trainer.accelerator", accelerator)
    where = f"{source}: trainer.accelerator={accelerator}" if source else f"--trainer.accelerator={accelerator}"
    known = ["auto", *sorted(AcceleratorRegistry.available_accelerators()), "gpu"]
    if accelerator not in known:
        raise ValueError(f"{where}: unknown accelerator{did_you_mean(accelerator, known)}; expected one of {', '.join(known)}")
    usable = usable_accelerators()
    if accelerator in usable:
        return
    cuda = "CUDA" if accelerator in ("gpu", "cuda") else None
    needs = cuda or DEVICE_NAMES.get(accelerator, accelerator)
    others = [n for n in usable if n not in ("auto", "cpu")]
    expected = "cpu or auto" if not others else f"one of {', '.join(usable)}"
    raise ValueError(f"{where}: no {needs} device is available on this machine; expected {expected}")


def check_strategy(strategy: Any, argv: list[str]) -> None:
    """Raise ValueError (one line naming the option, its value, where it was set, the strategy
    meant and the names Lightning's ``StrategyRegistry`` takes) when ``--trainer.strategy`` is a
    name Lightning does not know (``dpp``); Lightning's own refusal names neither the option nor
    the name meant. A ``Strategy`` (a class path with its init args) is not checked."""
    if not isinstance(strategy, str):
        return
    from lightning.pytorch.strategies import StrategyRegistry

    from swar_bench.utils.text import did_you_mean

    known = ["auto", *StrategyRegistry.available_strategies()]
    source = _option_source(argv, "trainer.strategy", strategy)
    where = f"{source}: trainer.strategy={strategy}" if source else f"--trainer.strategy={strategy}"
    if strategy not in known:
        main = [n for n in known if "find_unused" not in n and "stage" not in n]
        raise ValueError(f"{where}: unknown strategy{did_you_mean(strategy, known)}; expected a Strategy class path or "
                         f"one of {', '.join(main)}, ... (lightning.pytorch.strategies.StrategyRegistry)")
    package = strategy_package(strategy)
    if package is not None:
        import importlib.util

        if importlib.util.find_spec(package) is None:
            raise ValueError(f"{where}: needs the package {package}, which is not installed here; expected a strategy "
                             "this machine can run (e.g. auto, ddp)")


STRATEGY_PACKAGES = {"XLA": "torch_xla", "TPU": "torch_xla", "DeepSpeed": "deepspeed"}
"""The package a Lightning strategy class needs, by a part of its class name (``SingleDeviceXLAStrategy``)."""


def strategy_package(name: str) -> str | None:
    """The package the strategy ``name`` of Lightning's ``StrategyRegistry`` needs beyond Lightning
    and torch (``xla``: torch_xla; ``deepspeed_stage_2``: deepspeed), else None. Lightning reports
    a missing torch_xla with a traceback (``ModuleNotFoundError``)."""
    from lightning.pytorch.strategies import StrategyRegistry

    if name not in StrategyRegistry:
        return None
    cls = StrategyRegistry[name]["strategy"]
    return next((p for part, p in STRATEGY_PACKAGES.items() if part in cls.__name__), None)


def output_folders(cfg: Any, subcommand: str | None) -> list[tuple[str, str]]:
    """``(flag, folder)`` of every local output folder a run of ``subcommand`` writes into."""

    def get(key: str) -> Any:
        try:
            return cfg.get(key) if hasattr(cfg, "get") else None
        except (KeyError, AttributeError):
            return None

    folders = [("--trainer.default_root_dir", get("trainer.default_root_dir"))]
    loggers = get("trainer.logger")
    for i, logger in enumerate(loggers if isinstance(loggers, list) else [loggers]):
        init_args = getattr(logger, "init_args", None) if logger is not None else None
        if init_args is None and isinstance(logger, dict):
            init_args = logger.get("init_args")
        save_dir = init_args.get("save_dir") if init_args is not None and hasattr(init_args, "get") else None
        flag = "--trainer.logger.init_args.save_dir" if not isinstance(loggers, list) else f"--trainer.logger[{i}].init_args.save_dir"
        folders.append((flag, save_dir))
    if subcommand in (None, "fit"):
        folders.append(("--checkpoint.dirpath", get("checkpoint.dirpath")))
    if subcommand in (None, "predict"):
        folders.append(("--predictions.output_dir", get("predictions.output_dir")))
    folders += [("--accuracy.out_dir", get("accuracy.out_dir")), ("--calibration.out_dir", get("calibration.out_dir"))]
    return [(flag, str(folder)) for flag, folder in folders if isinstance(folder, (str, os.PathLike))]


CONFIG_EXPECTED = "a YAML mapping of options such as configs/quickstart.yaml"
"""What a ``--config`` file holds, as its refusals say it."""


def config_file_options(argv: list[str]) -> list[tuple[str, str]]:
    """``(flag, value)`` of every option of ``argv`` that loads a YAML file: ``--config FILE`` and
    an option group given a file (``--trainer FILE``, ``--data=FILE``:
    ``swar_bench.utils.option_table.GROUPS``), in order."""
    from swar_bench.utils.option_table import GROUPS

    flags = ("--config", *(f"--{group}" for group in GROUPS))
    found = []
    for i, arg in enumerate(argv):
        name, eq, value = arg.partition("=")
        if name in flags and (eq or i + 1 < len(argv)):
            found.append((name, value if eq else argv[i + 1]))
    return found


def config_file_problem(path: str, expected: str, not_mapping: str, groups: tuple[str, ...] = ()) -> str | None:
    """Why the YAML file ``path`` holds no mapping of options, in words that follow ``--flag=path:``
    (``not UTF-8 text (byte 0xff at position 0); expected <expected>``), or None when it holds one.
    A value that names no file is inline YAML to jsonargparse: fine when it is a mapping.
    ``not_mapping`` ends the line for a file holding another YAML value. A folder, a file that is
    not a regular file (read, a FIFO would block), one that cannot be read or is not UTF-8, empty
    or malformed YAML, a key given twice in one mapping, a key of ``groups`` (option groups such as
    ``trainer``) left empty (YAML null: jsonargparse said only ``Unexpected config: trainer:``):
    each named with what was expected."""
    import yaml

    if os.path.isdir(path):
        return f"a folder, not a file; expected {expected} in a file"
    if not os.path.isfile(path):
        if os.path.islink(path):
            return f"a link to {os.readlink(path)}, which does not exist; expected {expected} in a file"
        if os.path.lexists(path):
            return f"not a regular file; expected {expected} in a file"
        return None if inline_mapping(path) else f"no such file; expected {expected} in a file"
    from swar_bench.utils.yaml_keys import DuplicateKey, load_unique

    try:
        with open(path, encoding="utf-8") as handle:
            content = load_unique(handle)
    except DuplicateKey as err:  # YAML would keep the last value without a word
        return str(err)
    except UnicodeDecodeError as err:
        return f"not UTF-8 text (byte 0x{err.object[err.start]:02x} at position {err.start}); expected {expected}"
    except OSError as err:
        return f"cannot be read ({err.strerror or type(err).__name__}); expected {expected}"
    except yaml.YAMLError as err:  # jsonargparse's message names neither the file nor the line
        return f"not valid YAML ({yaml_problem(err)}); expected {expected}"
    if content is None:
        return f"the file is empty; expected {expected}"
    if not isinstance(content, dict):
        return f"holds a YAML {type(content).__name__}, not a mapping of options; {not_mapping}"
    empty = next((key for key in content if key in groups and content[key] is None), None)
    if empty is not None:
        return f"{empty}: is empty (YAML null); expected {empty} options indented under it, or no {empty}: line"
    for key in (k for k in content if k in groups and not isinstance(content[k], dict)):
        value = content[key]  # a string names a file of the group's options (jsonargparse reads it)
        here = os.path.join(os.path.dirname(os.path.abspath(path)), str(value))
        if isinstance(value, str) and value.strip() and (os.path.isfile(value) or os.path.isfile(here)):
            continue
        what = "names no file" if isinstance(value, str) else f"is a YAML {type(value).__name__}"
        return (f"{key}: {shown_yaml(value)} {what}; expected a mapping of {key} options indented under {key}: "
                "(or the path of a YAML file of them)")
    return None


def check_config_files(argv: list[str]) -> None:
    """Every ``--config FILE`` (and ``--trainer FILE``, ``--data FILE``, ...: :func:`config_file_options`)
    names a readable UTF-8 YAML file holding a mapping of options; else ValueError, one line naming
    the option, the file and what was expected (:func:`config_file_problem`). jsonargparse reports
    an empty file only as "Unexpected config:", a non-UTF-8 one without naming it."""
    for flag, path in config_file_options(argv):
        if flag == "--config":
            check_path_given(flag, path, "the path of a YAML file of options such as configs/quickstart.yaml")
            problem = config_file_problem(path, CONFIG_EXPECTED, "expected e.g. configs/quickstart.yaml", tuple(GROUPS))
        else:
            expected = f"a YAML mapping of {flag[2:]} options"
            problem = config_file_problem(path, expected, f"expected {expected}")
        if problem is not None:
            raise ValueError(f"{flag}={path}: {problem}")


def check_trainable(model: TBPTTModule, subcommand: str | None, ckpt_path: Any) -> None:
    """Before a run is built: ``fit`` of a mechanism without trainable parameters (the Oracle)
    raises ValueError (one line: nothing to train); ``validate`` / ``test`` / ``predict`` of a
    mechanism with trainable parameters and no ``--ckpt_path`` warns on stderr (rank 0) that the
    randomly initialised weights are evaluated, an untrained baseline and not a fit run."""
    mechanism = model.mechanism
    if subcommand == "fit" and not model.has_trainable_params:
        raise ValueError(
            f"--model.mechanism={mechanism_class_path(mechanism)} has no trainable parameters: nothing to train; "
            "expected a learned mechanism, or `swar-bench test` (e.g. --config configs/oracle.yaml) to evaluate it"
        )
    if subcommand in ("validate", "test", "predict") and ckpt_path in (None, "") and model.has_trainable_params and rank_zero():
        print(
            f"swar-bench {subcommand}: warning: no --ckpt_path, so {type(mechanism).__name__}'s randomly initialised "
            "(untrained) weights are evaluated; pass --ckpt_path last or <run>/checkpoints/last.ckpt to "
            f"{subcommand} a fit run",
            file=sys.stderr,
            flush=True,
        )


def check_model_fits(cfg: Any, subcommand: str | None) -> None:
    """Before the mechanism is built: its class is a ``ContextMechanism`` (``class_not_a_mechanism``)
    and its parameters fit in memory (``swar_bench.runtime.memory``, counted on the meta device;
    ``fit`` holds weights, gradients and Adam's moments), else ValueError naming
    ``--model.mechanism``. ``cfg``: the subcommand's config."""
    from swar_bench.mechanisms.registry import resolve_class
    from swar_bench.runtime.memory import check_fits

    mechanism = cfg.get("model.mechanism")
    class_path = getattr(mechanism, "class_path", None)
    init_args = getattr(mechanism, "init_args", None)
    if not class_path:
        return
    try:
        cls = resolve_class(str(class_path), "--model.mechanism")
    except ValueError:
        return  # named by the parser
    from swar_bench.mechanisms.protocol import PROTOCOL_EXPECTED, class_not_a_mechanism

    problem = class_not_a_mechanism(cls)  # before it is built: torch.nn.Identity would build, then fail
    if problem is not None:
        raise ValueError(f"--model.mechanism={class_path}: {problem}; {PROTOCOL_EXPECTED}")
    args = init_args.as_dict() if hasattr(init_args, "as_dict") else dict(init_args or {})
    accelerator = str(cfg.get("trainer.accelerator") or "cpu").lower()
    cuda = accelerator in ("gpu", "cuda", "auto") and torch.cuda.is_available()
    shown = ", ".join(f"{k}={v}" for k, v in args.items())
    check_fits(cls, args, f"--model.mechanism={class_path} ({shown})", copies=4 if subcommand == "fit" else 1,
               cuda=cuda)


def naming_the_option(message: str, cfg: Any, argv: list[str]) -> str:
    """``message`` led by the option of the argument it starts with (the mechanism's init args
    first, then the model's and the data module's, in ``cfg``; where it was set: the command line
    ``argv`` or one of its ``--config`` files), or unchanged when it starts with none."""
    import re

    from swar_bench.harness.values import mqar_option_line

    mqar = mqar_option_line(message, cfg, argv)  # "MQAR seed=-1: ...": --data.mqar.train_seed=-1
    if mqar is not None:
        return mqar
    first = re.match(r"(\w+)(=| )", message)
    if first is None:
        return message
    for group in ("model.mechanism.init_args", "model", "data"):
        values = cfg.get(group)
        if values is None or not hasattr(values, "keys") or first.group(1) not in values:
            continue
        option, value = f"{group}.{first.group(1)}", values.get(first.group(1))
        source = _option_source(argv, option, str(value))
        lead = f"{source}: {option}" if source is not None else f"--{option}"
        if first.group(2) == "=":  # "lr=-1.0 is invalid; ...": the option in place of the name
            return lead + message[len(first.group(1)):] if source is None else f"{lead}: {message}"
        return f"{lead}={value}: {message}" if source is None else f"{lead}: {message}"
    return message
