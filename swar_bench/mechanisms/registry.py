"""One name resolver for every command: a mechanism given by short name or by class path.

``fit``/``test`` (``--model.mechanism``), ``referee`` (``--mechanism``) and ``check-mechanism``
all accept

- a short name of the zoo (``swar_bench.mechanisms.MECHANISMS``): ``GRU`` is swar_bench's
  ``GRU``, never ``torch.nn.GRU``;
- a dotted class path ``module.Class`` importable from ``sys.path`` (``PYTHONPATH``), e.g.
  ``swar_bench.mechanisms.GRU`` or ``my_layer.MyModel`` for a layer in a file outside the package.

Anything else is a ``ValueError`` with one line naming the value, the valid short names and, when
one is close, a suggestion (``difflib.get_close_matches``).
"""

from __future__ import annotations

import difflib
import importlib

ZOO_MODULE = "swar_bench.mechanisms"


def zoo_names() -> list[str]:
    """Short names of the zoo, in the order the docs list them (``MECHANISMS``)."""
    from swar_bench.mechanisms import MECHANISMS

    return list(MECHANISMS)


def _suggest(value: str, names: list[str]) -> str:
    close = difflib.get_close_matches(value, names, n=1, cutoff=0.6)
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
        raise ValueError(f"{what}={name!r} is empty; expected one of {listing} or a class path module.Class")
    text = name.strip()
    if "." not in text:
        if text in names:
            return getattr(importlib.import_module(ZOO_MODULE), text)
        raise ValueError(
            f"{what}={text}: unknown mechanism; expected one of {listing} or a class path module.Class"
            f"{_suggest(text, names)}"
        )
    module_name, _, attr = text.rpartition(".")
    try:
        module = importlib.import_module(module_name)
    except ImportError as err:
        missing = getattr(err, "name", None) or module_name
        hint = " (is its folder on PYTHONPATH, or the package installed?)" if missing == module_name.split(".")[0] else ""
        raise ValueError(f"{what}={text}: cannot import module {module_name!r}: {err}{hint}") from None
    if not hasattr(module, attr):
        public = sorted(n for n, v in vars(module).items() if isinstance(v, type) and not n.startswith("_"))
        raise ValueError(
            f"{what}={text}: module {module_name!r} has no {attr!r}{_suggest(attr, public)}"
            + (f" (its classes: {', '.join(public[:12])})" if public else "")
        )
    cls = getattr(module, attr)
    if not isinstance(cls, type):
        raise ValueError(  # noqa: TRY004 - bad user input: the CLI reports ValueError as one line
            f"{what}={text} is a {type(cls).__name__}, not a class; expected a ContextMechanism class"
        )
    return cls


def class_defaults(cls: type) -> dict:
    """The constructor's keyword defaults that a config can hold (numbers, strings, booleans,
    None and lists of them): what ``Cls()`` is built with."""
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
    }


def _resolve_value(value: str, flag: str) -> str:
    """A ``flag`` value (a name, or an inline ``{class_path: ..., init_args: ...}`` mapping in JSON
    or YAML) -> a JSON mapping whose class path is resolved and whose init_args start from the
    class's defaults (:func:`class_defaults`), the given init_args over them."""
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
    cls = resolve_class(entry["class_path"], flag)
    entry["class_path"] = resolve_class_path(entry["class_path"], flag)
    entry["init_args"] = {**class_defaults(cls), **(entry.get("init_args") or {})}
    return json.dumps(entry)


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
