"""One name resolver for every command: a mechanism given by short name or by class path.

``fit``/``test`` (``--model.mechanism``), ``referee`` (``--mechanism``) and ``check-mechanism``
all accept

- a short name of the zoo (``swar_bench.mechanisms.MECHANISMS``): ``GRU`` is swar_bench's
  ``GRU``, never ``torch.nn.GRU``;
- a dotted class path ``module.Class`` importable from ``sys.path`` (``PYTHONPATH``), e.g.
  ``swar_bench.mechanisms.GRU`` or ``my_layer.MyModel`` for a layer in a file outside the package.

Anything else is a ``ValueError`` (:class:`MechanismNameError`) with one line naming the value, the valid short names and, when
one is close, a suggestion (``swar_bench.utils.text.closest_name``).
"""

from __future__ import annotations

import importlib
import os
from typing import Any

from swar_bench.utils.text import closest_name

ZOO_MODULE = "swar_bench.mechanisms"


class MechanismNameError(ValueError):
    """A mechanism name that is not one (one line naming the value and what was expected)."""


def zoo_names() -> list[str]:
    """Short names of the zoo, in the order the docs list them (``MECHANISMS``)."""
    from swar_bench.mechanisms import MECHANISMS

    return list(MECHANISMS)


def _suggest(value: str, names: list[str]) -> str:
    close = [c] if (c := closest_name(value, names)) else []
    if not close:
        lowered = {n.lower(): n for n in names}
        close = [lowered[value.lower()]] if value.lower() in lowered else []
    return f"; did you mean {close[0]!r}?" if close else ""


def resolve_class_path(name: str, what: str = "mechanism") -> str:
    """The full class path for ``name``: a short name of the zoo -> ``swar_bench.mechanisms.<name>``;
    a dotted path is imported and returned unchanged.

    Raises:
        ValueError: (one line) ``name`` is empty, an unknown short name, a module that cannot be
            imported, a missing attribute, or not a class.
    """
    resolve_class(name, what)
    text = name.strip()
    return f"{ZOO_MODULE}.{text}" if "." not in text else text


def resolve_class(name: str, what: str = "mechanism") -> type:
    """The class ``name`` denotes (see the module docstring); ``what`` names the option in errors.

    Raises:
        ValueError: as :func:`resolve_class_path`.
    """
    names = zoo_names()
    listing = ", ".join(names)
    if not isinstance(name, str) or not name.strip():
        raise MechanismNameError(f"{what}={name!r} is empty; expected one of {listing} or a class path module.Class")
    text = name.strip()
    if "." not in text:
        if text in names:
            return getattr(importlib.import_module(ZOO_MODULE), text)
        raise MechanismNameError(
            f"{what}={text}: unknown mechanism; expected one of {listing} or a class path module.Class"
            f"{_suggest(text, names)}"
        )
    module_name, _, attr = text.rpartition(".")
    if not module_name or not attr or text.startswith(".") or ".." in text:  # .GRU, ..GRU, a..B, GRU.
        raise MechanismNameError(
            f"{what}={text}: not a class path; expected one of {listing} or an absolute class path module.Class "
            "(no leading, doubled or trailing dot)")
    try:
        module = importlib.import_module(module_name)
    except ImportError as err:
        missing = getattr(err, "name", None) or module_name
        hint = " (is its folder on PYTHONPATH, or the package installed?)" if missing == module_name.split(".")[0] else ""
        raise MechanismNameError(f"{what}={text}: cannot import module {module_name!r}: {err}{hint}") from None
    except (ValueError, TypeError) as err:  # a name an import finder cannot even look up ('/', 'a b')
        raise MechanismNameError(f"{what}={text}: cannot import module {module_name!r} ({err}); expected a class "
                                 "path module.Class of an importable module") from None
    if not hasattr(module, attr):
        public = sorted(n for n, v in vars(module).items() if isinstance(v, type) and not n.startswith("_"))
        raise MechanismNameError(
            f"{what}={text}: module {module_name!r} has no {attr!r}{_suggest(attr, public)}"
            + (f" (its classes: {', '.join(public[:12])})" if public else "")
        )
    cls = getattr(module, attr)
    if not isinstance(cls, type):
        raise MechanismNameError(
            f"{what}={text} is a {type(cls).__name__}, not a class; expected a ContextMechanism class"
        )
    return cls


def class_defaults(cls: type) -> dict:
    """The constructor's keyword defaults that a config can hold (numbers, strings, booleans,
    None and lists of them): what ``Cls()`` is built with. Private parameters (``_weight`` of
    ``torch.nn.Embedding``) are left out: jsonargparse takes no option for them."""
    import inspect

    def plain(value) -> bool:
        if isinstance(value, (list, tuple)):
            return all(plain(v) for v in value)
        return value is None or isinstance(value, (bool, int, float, str))

    try:
        params = inspect.signature(cls).parameters.values()
    except (TypeError, ValueError):
        return {}
    return {
        p.name: list(p.default) if isinstance(p.default, tuple) else p.default
        for p in params
        if p.default is not inspect.Parameter.empty and p.kind is not inspect.Parameter.VAR_KEYWORD and plain(p.default)
        and not p.name.startswith("_")
    }


def accepted_args(class_path: str) -> list[str]:
    """The keyword arguments the constructor of ``class_path`` (a name or a dotted path) accepts
    as options (private ``_name`` ones are none), in order; empty when the class cannot be resolved or has no inspectable signature."""
    import inspect

    try:
        params = inspect.signature(resolve_class(class_path)).parameters.values()
    except (ValueError, TypeError):
        return []
    kinds = (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)
    return [p.name for p in params if p.kind in kinds and not p.name.startswith("_")]  # jsonargparse: no private ones


def resolve_entry(entry: dict, what: str) -> dict:
    """A mechanism entry ``{class_path: NAME, init_args: {...}}`` with ``NAME`` resolved
    (:func:`resolve_class_path`) and init_args starting from the class's defaults
    (:func:`class_defaults`), the given init_args over them: what a ``--flag=NAME`` on the
    command line and a ``class_path: NAME`` in a ``--config`` file both become.

    Raises:
        ValueError: (one line naming ``what``) as :func:`resolve_class_path`.
    """
    cls = resolve_class(entry["class_path"], what)
    init_args = entry.get("init_args")
    if init_args is not None and not isinstance(init_args, dict):
        raise MechanismNameError(f"{what}.init_args={init_args!r}: expected a mapping of {cls.__name__}'s arguments")
    return {
        **entry,
        "class_path": resolve_class_path(entry["class_path"], what),
        "init_args": {**class_defaults(cls), **(init_args or {})},
    }


def _resolve_value(value: str, flag: str) -> str:
    """A ``flag`` value (a name, or an inline ``{class_path: ..., init_args: ...}`` mapping in JSON
    or YAML) -> a JSON mapping resolved by :func:`resolve_entry`."""
    import json

    import yaml

    text = value.strip()
    if text.startswith("{"):
        try:
            entry = yaml.safe_load(text)
        except yaml.YAMLError:
            return value  # the parser names the malformed value itself
        if not (isinstance(entry, dict) and isinstance(entry.get("class_path"), str)):
            return value
    else:
        entry = {"class_path": text}
    return json.dumps(resolve_entry(entry, flag))


def resolve_config_mechanism(config: Any, keys: tuple[str, ...], where: str) -> Any:
    """``config`` (a loaded ``--config`` file) with its mechanism entry at ``keys`` (e.g.
    ``("model", "mechanism")``), a name or a mapping with a ``class_path``, resolved by
    :func:`resolve_entry` in place, so a config file reads names as the command line does;
    anything else is returned as it is (the parser judges it). ``where`` names the file in errors.

    Raises:
        ValueError: (one line: ``--config=FILE: model.mechanism.class_path=NAME: ...``) as
            :func:`resolve_entry`.
    """
    node = config
    for key in keys[:-1]:
        node = node.get(key) if isinstance(node, dict) else None
    if not isinstance(node, dict) or keys[-1] not in node:
        return config
    entry = node[keys[-1]]
    if isinstance(entry, str):
        entry = {"class_path": entry}
    if isinstance(entry, dict) and isinstance(entry.get("class_path"), str):
        node[keys[-1]] = resolve_entry(entry, f"{where}: {'.'.join(keys)}.class_path")
    return config


def config_parser_mode(keys: tuple[str, ...]) -> str:
    """The jsonargparse ``parser_mode`` (registered once with ``jsonargparse.set_loader``) whose
    loader is jsonargparse's YAML loader followed, for a config file, by
    :func:`resolve_config_mechanism` at ``keys``: ``fit --config run.yaml`` with
    ``model.mechanism: {class_path: GRU}`` builds swar_bench's GRU at its defaults, as
    ``--model.mechanism=GRU`` does, and an unknown name is the same one-line ValueError."""
    import yaml
    from jsonargparse import get_loader, set_loader

    mode = "swar_bench_" + "_".join(keys)
    if mode in _MODES:
        return mode
    base = get_loader("yaml")

    def load(value: str, path: str = "") -> Any:
        loaded = base(value)
        # jsonargparse passes the file name and reads it from its folder: name the whole path
        return resolve_config_mechanism(loaded, keys, f"--config={os.path.abspath(path)}") if path else loaded

    set_loader(mode, load, exceptions=(yaml.YAMLError,))  # the YAML loader's own errors
    _MODES.add(mode)
    return mode


_MODES: set[str] = set()

CONFIG_MODE_KEYS = (("model", "mechanism"), ("mechanism",))
"""The ``keys`` of each command's :func:`config_parser_mode`: LightningCLI's (``fit``, ``test``,
...) and the referee's."""


def register_config_modes() -> None:
    """Register the parser mode of every command (``CONFIG_MODE_KEYS``). A process started by
    Lightning's ``ddp_spawn`` (or ``ddp_notebook``) unpickles the CLI's parser, whose mode is
    one of them, and dumps the run's config with it: jsonargparse's loaders live in the process
    that registered them, so ``swar_bench.module`` (the model it unpickles) calls this on import."""
    for keys in CONFIG_MODE_KEYS:
        config_parser_mode(keys)


def replaced_init_args(argv: list[str], flag: str) -> list[str]:
    """One line per ``flag`` value in ``argv`` that replaces init args given before it on the
    command line (``--flag.init_args.X=V`` or ``--flag.X=V``): a new mechanism starts from its
    class's defaults (:func:`rewrite_mechanism_args`), so those are dropped, e.g.
    ``--model.mechanism=GRU replaces --model.mechanism.init_args.n_layers=1 given before it (GRU
    starts from its defaults); give init args after --model.mechanism to keep them``. Init args
    given before any mechanism value and any ``--config`` replace nothing, so they get no line:
    the command refuses them as given before any mechanism was chosen."""
    lines, given = [], []
    chosen = False  # a mechanism flag or a --config (which may name one) came before
    i = 0
    while i < len(argv):
        name, eq, value = argv[i].partition("=")
        if name == "--config":
            chosen = True
            i += 1 if eq else 2
            continue
        if name == flag and (eq or i + 1 < len(argv)):
            chosen = True
            if not eq:
                value, i = argv[i + 1], i + 1
            if given:
                shown = value.strip() if len(value) <= 60 else value[:60] + "..."
                lines.append(
                    f"{flag}={shown} replaces {' '.join(given)} given before it (the new mechanism starts from its "
                    f"class's defaults); give init args after {flag} to keep them"
                )
            given = []
        elif name.startswith(flag + ".") and name != f"{flag}.class_path":
            if not eq and i + 1 < len(argv):
                value, i = argv[i + 1], i + 1
            if chosen:  # before any mechanism they replace nothing: the parser refuses them in one line
                given.append(f"{name}={value}")
        i += 1
    return lines


def rewrite_mechanism_args(argv: list[str], flag: str) -> list[str]:
    """``argv`` with every value of ``flag`` (``--flag=V``, ``--flag V``) resolved: ``--mechanism=GRU``
    -> ``--mechanism={"class_path": "swar_bench.mechanisms.GRU", "init_args": {<GRU's defaults>}}``;
    ``--flag.class_path=V`` gets the full class path only. Used by ``fit``/``test``/``demo``
    (``--model.mechanism``) and ``referee`` (``--mechanism``), so all read names the same way.

    A new mechanism value starts from its class's defaults, not from the init_args the previous
    mechanism had in an earlier ``--config`` (jsonargparse would carry over those the new class
    accepts): ``--config configs/quickstart.yaml --model.mechanism=GRU`` builds the same GRU as
    ``--config configs/quickstart.yaml --config configs/mechanisms/gru.yaml``. Options after it
    (``--model.mechanism.init_args.d_model=32``) still apply.

    Raises:
        ValueError: (one line naming ``flag``) a name that is not a zoo name or an importable class.
    """
    out = list(argv)
    i = 0
    while i < len(out):
        arg = out[i]
        name, eq, value = arg.partition("=")
        if name == f"{flag}.class_path" and eq:
            out[i] = f"{name}={resolve_class_path(value, name)}"
        elif name == flag and eq:
            out[i] = f"{name}={_resolve_value(value, name)}"
        elif arg in (flag, f"{flag}.class_path") and i + 1 < len(out) and not out[i + 1].startswith("--"):
            out[i + 1] = _resolve_value(out[i + 1], arg) if arg == flag else resolve_class_path(out[i + 1], arg)
            i += 1
        i += 1
    return out


def check_mechanism_class(argv: list[str], option: str = "model.mechanism") -> None:
    """Raise ValueError (one line) when the mechanism ``argv`` sets last (``--model.mechanism=X``
    or a ``--config`` file's ``model.mechanism``; ``option="mechanism"``: the referee's
    ``--mechanism`` and top-level ``mechanism:``) is an importable class that is no
    ContextMechanism (``mechanisms.protocol.class_not_a_mechanism``): said before any check of its
    arguments, which would name them instead (``torch.nn.GRU needs input_size``,
    ``torch.nn.Embedding``'s ``_weight``). A file that cannot be read is left to
    ``harness.checks.check_config_files``."""
    import yaml

    from swar_bench.mechanisms.protocol import PROTOCOL_EXPECTED, class_not_a_mechanism
    from swar_bench.utils.text import shown_yaml
    from swar_bench.utils.yaml_keys import load_unique

    last: tuple[str, str] | None = None  # (lead, class path) of the last setting
    for i, arg in enumerate(argv):
        flag, eq, value = arg.partition("=")
        value = value if eq else (argv[i + 1] if i + 1 < len(argv) else "")
        if flag == f"--{option}" and value and not value.lstrip().startswith("{"):
            last = (f"--{option}={value}", value)
        elif flag == "--config" and os.path.isfile(value):
            try:
                with open(value, encoding="utf-8") as handle:
                    node = load_unique(handle) or {}
                for key in option.split("."):
                    node = node.get(key)
            except (OSError, ValueError, AttributeError, yaml.YAMLError):
                continue
            where = f"--config={os.path.abspath(value)}: {option}"
            if node is not None and not isinstance(node, (str, dict)):  # 5, [GRU], true
                raise ValueError(f"{where}={shown_yaml(node)}: expected a zoo name (e.g. GRU), a class path "
                                 "module.Class, or class_path: and init_args: under it")
            path = node.get("class_path") if isinstance(node, dict) else node
            init_args = node.get("init_args") if isinstance(node, dict) else None
            if init_args is not None and not isinstance(init_args, dict):
                raise ValueError(f"{where}.init_args={shown_yaml(init_args)}: expected a mapping of "
                                 f"{str(path or 'the class').rsplit('.', 1)[-1]}'s arguments")
            if isinstance(path, str) and path:
                last = (f"{where}={path}", path)
    if last is None:
        return
    try:
        problem = class_not_a_mechanism(resolve_class(last[1]))
    except ValueError:
        return  # no such class: the parser names it
    if problem is not None:
        raise ValueError(f"{last[0]}: {problem}; {PROTOCOL_EXPECTED}")
