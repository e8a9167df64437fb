"""The layering rules of docs/ARCHITECTURE.md, "The layers", hold: every import of every module
of the package (module level and inside functions, parsed with ``ast``) points to a layer its
own layer may use, and no module is longer than ``MAX_LINES``.

The layers, bottom up (a layer may import its own modules and those its rule names):

- ``utils``: ``swar_bench/utils/`` (atomic files, interrupts, locks, option checks, intervals, ranks,
  quiet output, text) and the package's ``__init__``: only each other, no torch, no Lightning;
- ``tbptt``: ``swar_bench/tbptt.py``, the TBPTT chunk loop of the module and the referee: ``utils``;
- ``runtime``: ``swar_bench/runtime/`` (checkpoint files, DDP / FSDP, memory, SLURM): ``utils``;
- ``tasks``: the task, numpy only (no torch, no Lightning): ``utils``;
- ``mechanisms``: the zoo, no Lightning: ``tasks`` (the Oracle and the task-fit check read the
  task's rules), ``utils``;
- ``datamodules``: ``tasks``, ``utils``;
- ``module``: ``mechanisms``, ``datamodules``, ``tasks``, ``tbptt``, ``runtime``, ``utils``;
- ``referee``: beside the harness, no Lightning: ``mechanisms``, ``tbptt``, ``utils``;
- ``callbacks``: ``module``, ``mechanisms``, ``datamodules``, ``tasks``, ``referee`` (its bandit
  and its self-knowledge correlation), ``tbptt``, ``runtime``, ``utils``;
- ``config_errors``: the one-line error of a refused option, shared by the commands:
  ``mechanisms``, ``utils``;
- the commands of the lower packages (``tasks/cli.py`` with ``tasks/cli_options.py``,
  ``mechanisms/check_cli.py``, ``referee/cli.py``): what their package may import, their package,
  ``config_errors``; the mechanism check also ``runtime`` (does a mechanism fit in memory);
- ``harness``: the Lightning command line (``swar_bench/harness/``, ``lightning_cli``, ``demo``):
  every layer above except ``study`` and ``cli``;
- ``study``: ``swar-bench study``, above the harness's command line: every layer except the
  command line's internals (``cli``, ``harness/``, ``lightning_cli``, ``demo``);
- ``cli``: ``swar_bench/cli.py``, the dispatcher on top: everything.

Nothing below ``study`` imports it (only ``cli`` may).
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "swar_bench"

LAYER_OF = {
    "swar_bench.utils": "utils",
    "swar_bench": "utils",  # the package's __init__: its version string
    "swar_bench.tbptt": "tbptt",
    "swar_bench.runtime": "runtime",
    "swar_bench.tasks": "tasks",
    "swar_bench.tasks.cli": "tasks.cli",
    "swar_bench.tasks.cli_options": "tasks.cli",
    "swar_bench.mechanisms": "mechanisms",
    "swar_bench.mechanisms.check_cli": "mechanisms.check_cli",
    "swar_bench.datamodules": "datamodules",
    "swar_bench.module": "module",
    "swar_bench.referee": "referee",
    "swar_bench.referee.cli": "referee.cli",
    "swar_bench.callbacks": "callbacks",
    "swar_bench.config_errors": "config_errors",
    "swar_bench.class_item_errors": "config_errors",
    "swar_bench.harness": "harness",
    "swar_bench.lightning_cli": "harness",
    "swar_bench.demo": "harness",
    "swar_bench.study": "study",
    "swar_bench.cli": "cli",
}
"""Each module's layer: the longest dotted prefix of its name listed here."""

ALLOWED = {
    "utils": {"utils"},
    "tbptt": {"tbptt", "utils"},
    "runtime": {"runtime", "utils"},
    "tasks": {"tasks", "utils"},
    "mechanisms": {"mechanisms", "tasks", "utils"},
    "datamodules": {"datamodules", "tasks", "utils"},
    "module": {"module", "mechanisms", "datamodules", "tasks", "tbptt", "runtime", "utils"},
    "referee": {"referee", "mechanisms", "tbptt", "utils"},
    "callbacks": {"callbacks", "module", "mechanisms", "datamodules", "tasks", "referee", "tbptt", "runtime", "utils"},
    "config_errors": {"config_errors", "mechanisms", "utils"},
}
ALLOWED["tasks.cli"] = ALLOWED["tasks"] | {"tasks.cli", "config_errors"}
ALLOWED["mechanisms.check_cli"] = ALLOWED["mechanisms"] | {"mechanisms.check_cli", "config_errors", "runtime"}
ALLOWED["referee.cli"] = ALLOWED["referee"] | {"referee.cli", "config_errors"}
BELOW_THE_HARNESS = set().union(*ALLOWED.values())
ALLOWED["harness"] = BELOW_THE_HARNESS | {"harness"}
ALLOWED["study"] = BELOW_THE_HARNESS | {"study"}
ALLOWED["cli"] = set(ALLOWED) | {"cli"}

NO_EXTERNAL = {
    "utils": ("torch", "lightning", "pytorch_lightning", "torchmetrics"),
    "tasks": ("torch", "lightning", "pytorch_lightning", "torchmetrics"),
    "mechanisms": ("lightning", "pytorch_lightning"),
    "referee": ("lightning", "pytorch_lightning"),
}
"""Libraries a layer must not import: the helpers and the task are torch-free; mechanisms and the
referee know nothing of Lightning."""

MAX_LINES = 600
"""No module of the package is longer (one idea a file)."""

OVER_MAX_LINES: set[str] = set()
"""The only modules allowed over ``MAX_LINES``, each with the reason (none)."""


def layer_of(module: str) -> str:
    """The layer of a dotted module name under ``swar_bench`` (KeyError for another name)."""
    if module == "swar_bench":
        return LAYER_OF[module]
    parts = module.split(".")
    for end in range(len(parts), 1, -1):  # a new module at the package root has no layer until listed
        prefix = ".".join(parts[:end])
        if prefix in LAYER_OF:
            return LAYER_OF[prefix]
    raise KeyError(module)


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def imports_of(path: Path) -> list[tuple[int, str]]:
    """``(line, dotted name)`` of every import in the file, at any depth; ``from swar_bench.utils import
    interrupts`` names the submodule ``swar_bench.utils.interrupts`` when there is one, relative
    imports are resolved against the file's package."""
    package = module_name(path) if path.name == "__init__.py" else module_name(path).rpartition(".")[0]
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, *([node.module] if node.module else [])])
            for alias in node.names:
                sub = f"{base}.{alias.name}"
                is_module = (ROOT / Path(*sub.split("."))).with_suffix(".py").is_file() or (
                    ROOT / Path(*sub.split("."))
                ).is_dir()
                found.append((node.lineno, sub if is_module else base))
    return found


def violations(edges: list[tuple[str, int, str]]) -> list[str]:
    """``"path:line: a (layer) imports b (layer)"`` for each edge ``(module, line, imported)``
    that goes against the rules above."""
    bad = []
    for module, line, target in edges:
        source = layer_of(module)
        if target == "swar_bench" or target.startswith("swar_bench."):
            if layer_of(target) not in ALLOWED[source]:
                bad.append(f"{module}:{line}: {module} ({source}) imports {target} ({layer_of(target)})")
        elif target.split(".")[0] in NO_EXTERNAL.get(source, ()):
            bad.append(f"{module}:{line}: {module} ({source}) imports {target}, which its layer must not")
    return bad


def package_edges() -> list[tuple[str, int, str]]:
    return [
        (module_name(path), line, target)
        for path in sorted(PACKAGE.rglob("*.py"))
        if "__pycache__" not in path.parts
        for line, target in imports_of(path)
    ]


def test_every_import_of_the_package_follows_the_layers():
    edges = package_edges()
    assert len(edges) > 300  # the parser sees the package's imports (module level and in functions)
    assert violations(edges) == []


def test_every_module_has_a_layer():
    assert [m for m, _, _ in package_edges() if not _has_layer(m)] == []


def test_the_packages_show_the_layers():
    # every module of a layer's folder is in that layer: the folders are the layers
    for folder, layer in (("utils", "utils"), ("runtime", "runtime"), ("harness", "harness")):
        assert {layer_of(module_name(p)) for p in (PACKAGE / folder).glob("*.py")} == {layer}
    assert sorted(p.name for p in PACKAGE.glob("*.py")) == [
        "__init__.py", "class_item_errors.py", "cli.py", "config_errors.py", "demo.py", "lightning_cli.py", "module.py", "tbptt.py"
    ]


def lines_of(path: Path) -> int:
    return len(path.read_text(encoding="utf-8").splitlines())


def modules_over(limit: int, root: Path = PACKAGE) -> list[str]:
    """The paths (``swar_bench/...``: relative to ``root``'s parent) of the modules under ``root``
    longer than ``limit`` lines, sorted."""
    return sorted(
        path.relative_to(root.parent).as_posix() for path in root.rglob("*.py")
        if "__pycache__" not in path.parts and lines_of(path) > limit
    )


def test_no_module_is_longer_than_the_limit():
    assert [p for p in modules_over(MAX_LINES) if p not in OVER_MAX_LINES] == []


def test_the_allowed_long_modules_exist():
    # an allowance outlives its module only by mistake: each names a file of the package
    assert all((ROOT / p).is_file() for p in OVER_MAX_LINES)


@given(st.integers(min_value=1, max_value=3), st.integers(min_value=0, max_value=3))
def test_a_module_over_the_limit_is_found(limit, extra):
    import tempfile

    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        long, short = root / "long.py", root / "short.py"
        long.write_text("x = 1\n" * (limit + 1 + extra), encoding="utf-8")
        short.write_text("x = 1\n" * limit, encoding="utf-8")
        assert modules_over(limit, root) == [f"{root.name}/long.py"]


def test_the_data_store_and_the_data_commands_have_their_layers():
    assert {layer_of(module_name(p)) for p in (PACKAGE / "tasks" / "store").glob("*.py")} == {"tasks"}
    assert layer_of("swar_bench.tasks.cli_options") == layer_of("swar_bench.tasks.cli") == "tasks.cli"


def _has_layer(module: str) -> bool:
    try:
        layer_of(module)
    except KeyError:
        return False
    return True


@pytest.mark.parametrize(
    ("module", "target"),
    [
        ("swar_bench.mechanisms.conformance", "swar_bench.module"),  # check_task_fits lived in the module
        ("swar_bench.referee.cli", "swar_bench.lightning_cli"),  # parse_error_line lived in the harness
        ("swar_bench.tasks.hub_io", "torch"),
        ("swar_bench.tasks.store.read", "torch"),  # the data store is the task's layer: numpy only
        ("swar_bench.tasks.store.write", "swar_bench.tasks.cli_options"),  # the store knows no command line
        ("swar_bench.mechanisms.gla", "lightning.pytorch"),
        ("swar_bench.callbacks.calibration", "swar_bench.study.report"),
        ("swar_bench.study.runner", "swar_bench.lightning_cli"),
        ("swar_bench.utils.files", "swar_bench.tasks.passkey_swar"),
        ("swar_bench.utils.files", "torch"),  # the helpers are torch-free
        ("swar_bench.utils.interrupts", "swar_bench.runtime.slurm"),  # the helpers import only each other
        ("swar_bench.runtime.slurm", "swar_bench.harness.runs"),  # the runtime knows no command line
        ("swar_bench.mechanisms.gla", "swar_bench.runtime.memory"),  # only the mechanism check reads it
        ("swar_bench.callbacks.flops_summary", "swar_bench.harness.run_folders"),
        ("swar_bench.study.launchers", "swar_bench.harness.runs"),
        ("swar_bench.study.report", "swar_bench.lightning_cli"),
        ("swar_bench.tbptt", "swar_bench.module"),
    ],
)
def test_the_imports_the_rules_forbid_are_found(module, target):
    assert len(violations([(module, 1, target)])) == 1


def test_imports_are_resolved_as_python_does():
    found = {name: line for line, name in imports_of(PACKAGE / "tasks" / "cli.py")}
    assert "swar_bench.utils.interrupts" in found  # from swar_bench.utils import interrupts: the submodule
    assert all(name not in ("swar_bench", "swar_bench.utils") for name in found)


LAYERS = sorted(ALLOWED)
MODULE_IN = {layer: next(m for m, lay in LAYER_OF.items() if lay == layer) for layer in LAYERS}


@given(st.sampled_from(LAYERS), st.sampled_from(LAYERS))
def test_any_import_between_two_layers_is_judged_by_the_rules(source, target):
    importer, imported = MODULE_IN[source], MODULE_IN[target] + ".anything"
    assert (violations([(importer, 1, imported)]) == []) == (target in ALLOWED[source])
