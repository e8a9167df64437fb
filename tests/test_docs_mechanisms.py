"""docs/MECHANISMS.md, "Bring your own layer": its commands run on examples/my_layer.py (few steps)."""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path

import pytest

from swar_bench.cli import main

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "MECHANISMS.md"


def doc_commands() -> tuple[str, list[list[str]]]:
    """The PYTHONPATH folder and the swar-bench commands of the section's first bash block."""
    text = DOC.read_text()
    section = text[text.index("## Bring your own layer") :]
    end = section.find("\n## ", 10)
    section = section if end < 0 else section[:end]
    block = re.search(r"### The commands.*?```bash\n(.*?)```", section, flags=re.DOTALL).group(1)
    lines = [ln for ln in block.splitlines() if ln.strip()]
    path = re.fullmatch(r"export PYTHONPATH=(\S+)", lines[0]).group(1)
    return path, [shlex.split(ln)[1:] for ln in lines[1:] if ln.startswith("swar-bench ")]


FEW_STEPS = {
    "check-mechanism": ["--seq-len", "16", "--long-len", "64"],
    "fit": ["--trainer.max_steps=2", "--trainer.val_check_interval=2", "--data.val_configs=[32]", "--data.eval_examples=2",
            "--model.mechanism.init_args.d_model=8", "--trainer.enable_progress_bar=false", "--trainer.enable_model_summary=false"],
    "test": ["--data.test_configs=[32]", "--data.eval_examples=2", "--model.mechanism.init_args.d_model=8",
             "--trainer.enable_progress_bar=false"],
    "referee": ["--ranges", "[6, 12]", "--n_train_steps", "2", "--n_eval_trials", "4", "--perplexity_steps", "1",
                "--curriculum_rounds", "2", "--batch_size", "4", "--mechanism.init_args.d_model=8"],
}


def test_the_docs_commands_run_on_the_example_layer(tmp_path, monkeypatch, capsys):
    path, commands = doc_commands()
    assert [c[0] for c in commands] == ["check-mechanism", "fit", "test", "referee"]
    monkeypatch.syspath_prepend(str(ROOT / path))
    monkeypatch.chdir(ROOT)
    runs = tmp_path / "runs"
    for argv in commands:
        extra = list(FEW_STEPS[argv[0]])
        if argv[0] in ("fit", "test"):
            extra.append(f"--trainer.logger.init_args.save_dir={runs}")
        if argv[0] == "referee":
            extra += ["--out", str(tmp_path / "referee")]
        assert main([*argv, *extra]) == 0, argv
        out = capsys.readouterr().out
        if argv[0] == "check-mechanism":
            assert out.splitlines()[0] == "check-mechanism my_layer.EMAModel(d_model=32)"
            assert out.rstrip().endswith("all 12 checks passed")
        if argv[0] == "fit":
            assert "swar-bench fit: EMAModel (my_layer.EMAModel): " in out
    run = runs / "quickstart" / "EMAModel" / "version_0"
    assert (run / "checkpoints" / "last.ckpt").is_file()
    assert sorted(p.name for p in run.glob("answer_type_accuracy.*")) == [
        "answer_type_accuracy.csv", "answer_type_accuracy.md"]
    result = json.loads((tmp_path / "referee" / "result.json").read_text())
    assert result["mechanism"]["class"] == "my_layer.EMAModel"
    assert result["state"]["state_bytes_analytic"] == 8 * 4  # one block, d_model 8, float32


@pytest.mark.parametrize("name", ["EMAModel"])
def test_the_example_file_needs_only_the_documented_imports(name):
    text = (ROOT / "examples" / "my_layer.py").read_text()
    imports = {ln for ln in text.splitlines() if ln.startswith(("import ", "from "))}
    documented = DOC.read_text()
    assert all(ln in documented for ln in imports if "__future__" not in ln), imports
    assert f"class {name}(MixerLM)" in text


def test_architecture_names_only_files_that_exist():
    text = (ROOT / "docs" / "ARCHITECTURE.md").read_text()
    paths = set(re.findall(r"`((?:swar_bench|scripts|benchmarks|configs)/[^`\s]*)`", text))
    assert len(paths) > 20
    for path in paths:
        base = path if path.startswith(("swar_bench/", "scripts/", "benchmarks/", "configs/")) else f"swar_bench/{path}"
        assert list(ROOT.glob(base)), path
    # short names relative to swar_bench/ in the table (e.g. `tasks/oracle.py`)
    for path in re.findall(r"`((?:tasks|mechanisms|referee|callbacks)/[^`\s]+\.py)`", text):
        assert (ROOT / "swar_bench" / path).is_file(), path


def test_no_code_or_doc_points_to_a_missing_design_note():
    files = [*ROOT.glob("swar_bench/**/*.py"), *ROOT.glob("docs/*.md"), ROOT / "README.md"]
    assert [str(f) for f in files if "DESIGN.md" in f.read_text()] == []
