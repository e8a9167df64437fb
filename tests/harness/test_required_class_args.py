"""A class given to a class-typed option (``--trainer.callbacks+=EarlyStopping``,
``--trainer.logger=...``) without an init arg its constructor requires is one line naming the
missing option (``EarlyStopping needs --trainer.callbacks.monitor (e.g. val/loss)``), not
jsonargparse's "Expected one of list[...Callback] ... Got value: [Namespace(...)]"."""

from __future__ import annotations

import inspect
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from lightning.pytorch import callbacks

from swar_bench.lightning_cli import main

QUICKSTART = str(Path(__file__).resolve().parents[2] / "configs" / "quickstart.yaml")


def _lines(capsys, argv):
    code = main(argv)
    captured = capsys.readouterr()
    assert "Traceback" not in captured.err + captured.out
    return code, [ln for ln in captured.err.splitlines() if ln.startswith("swar-bench")]


def test_the_reported_early_stopping_without_monitor_is_one_line(capsys):
    code, err = _lines(capsys, ["fit", "--config", QUICKSTART, "--trainer.max_steps=2", "--trainer.callbacks+=EarlyStopping"])
    assert code == 2
    assert err == [("swar-bench: error: EarlyStopping needs --trainer.callbacks.monitor (e.g. val/loss); expected the "
                   "required argument of lightning.pytorch.callbacks.EarlyStopping")]


def test_a_config_file_callback_without_monitor_names_the_file(capsys, tmp_path):
    config = tmp_path / "es.yaml"
    config.write_text("trainer:\n  callbacks: [{class_path: EarlyStopping}]\n")
    code, err = _lines(capsys, ["fit", "--config", QUICKSTART, "--trainer.max_steps=2", "--config", str(config)])
    assert code == 2
    assert err == [(f"swar-bench: error: --config={config}: EarlyStopping needs trainer.callbacks.init_args.monitor "
                   "(e.g. val/loss); expected the required argument of lightning.pytorch.callbacks.EarlyStopping")]


def _required(package, names):
    found = []
    for name in names:
        params = inspect.signature(getattr(package, name)).parameters.values()
        required = [p.name for p in params if p.default is inspect.Parameter.empty
                    and p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)]
        if required:
            found.append((name, required))
    return found


REQUIRED = [("callbacks+", n, r) for n, r in _required(callbacks, ["EarlyStopping", "ModelPruning", "LambdaCallback"])]


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.sampled_from(REQUIRED))
def test_any_class_without_a_required_arg_is_one_line_naming_it(capsys, tmp_path, monkeypatch, case):
    monkeypatch.chdir(tmp_path)
    option, name, required = case
    code, err = _lines(capsys, ["fit", "--model.mechanism=GRU", "--trainer.max_steps=2", "--trainer.fast_dev_run=true",
                                f"--trainer.{option}={name}"])
    assert code == 2 and len(err) == 1
    flag = f"--trainer.{option.rstrip('+')}"
    assert err[0].startswith(f"swar-bench: error: {name} needs {flag}.{required[0]}")
    assert all(f"{flag}.{r}" in err[0] for r in required)
