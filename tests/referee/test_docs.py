"""docs/REFEREE.md: the Python snippet runs exactly what configs/referee/quick.yaml runs."""

import ast
import re
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]
QUICK = ROOT / "configs" / "referee" / "quick.yaml"
DOC = ROOT / "docs" / "REFEREE.md"


def _snippet_calls() -> tuple[dict[str, str], dict[str, ast.Call]]:
    """The imports (name -> module) and the calls (callee name -> call) of the doc's Python block."""
    blocks = re.findall(r"```python\n(.*?)```", DOC.read_text(), flags=re.DOTALL)
    assert len(blocks) == 1, "expected one Python snippet in docs/REFEREE.md"
    tree = ast.parse(blocks[0])
    imports = {
        alias.name: node.module
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom)
        for alias in node.names
    }
    calls = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            f = node.func
            name = f.id if isinstance(f, ast.Name) else ast.unparse(f)
            assert name not in calls or name == "print", f"{name} called twice in the snippet"
            calls[name] = node
    return imports, calls


def _kwargs(call: ast.Call) -> dict:
    return {k.arg: ast.literal_eval(k.value) for k in call.keywords}


def _plain(v):
    return [float(x) for x in v] if isinstance(v, (list, tuple)) else v


def test_python_snippet_passes_every_option_of_quick_yaml():
    config = yaml.safe_load(QUICK.read_text())
    imports, calls = _snippet_calls()
    mechanism = config.pop("mechanism")
    module, cls = mechanism["class_path"].rsplit(".", 1)
    evaluate_call = calls["evaluate"]
    (built,) = evaluate_call.args
    assert isinstance(built, ast.Call) and built.func.id == cls and imports[cls] == module
    assert _kwargs(built) == mechanism["init_args"]
    assert ast.literal_eval(calls["torch.manual_seed"].args[0]) == config["seed"]
    assert ast.literal_eval(calls["torch.set_num_threads"].args[0]) == config.pop("threads")
    config.pop("out")  # where the command writes result.json; the snippet prints the table
    given = _kwargs(evaluate_call)
    assert sorted(given) == sorted(config)  # no option of the config left out, none added
    for key, value in config.items():
        assert _plain(given[key]) == _plain(value), key  # compute_budget_flops among them
