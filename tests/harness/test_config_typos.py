"""A typo'd key in a --config file (issue 26, item 9) was reported without the file's name, without a
suggestion and only the first of several: now one line names the file, every unknown key, and the
closest option of each."""

from __future__ import annotations

import re
import tempfile
from pathlib import Path

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import swar_bench.lightning_cli as lc
from swar_bench.config_errors import unknown_config_keys
from swar_bench.harness.fast_options import nested_fields
from swar_bench.lightning_cli import main
from tests.harness.cli_lines import one_error_line

CONFIGS = Path(__file__).resolve().parents[2] / "configs"




@pytest.fixture(scope="module")
def fit_options():
    """The dotted option names and the file-loading groups of the real `fit` parser."""
    seen = {}
    original = lc.SwarBenchCLI._unknown_config_keys

    def capture(self, args):
        parser = self._subcommand_parsers["fit"]
        seen["options"] = {a.dest for a in parser._actions if isinstance(getattr(a, "dest", None), str)}
        seen["groups"] = {a.dest for a in parser._actions if type(a).__name__ == "_ActionConfigLoad"}
        return original(self, args)

    lc.SwarBenchCLI._unknown_config_keys = capture
    try:
        with tempfile.TemporaryDirectory() as folder:
            path = Path(folder, "typo.yaml")
            path.write_text("trainer:\n  max_step: 10\n")
            assert main(["fit", "--config", str(CONFIGS / "quickstart.yaml"), "--config", str(path)]) == 2
    finally:
        lc.SwarBenchCLI._unknown_config_keys = original
    return seen["options"], seen["groups"]


def test_a_typo_in_a_config_file_names_the_file_and_the_option_meant(tmp_path, capsys):
    # the reported input: `max_step:` under trainer
    path = tmp_path / "run.yaml"
    path.write_text("trainer:\n  max_step: 10\n")
    assert main(["fit", "--config", str(CONFIGS / "quickstart.yaml"), "--config", str(path)]) == 2
    assert one_error_line(capsys) == (
        f"swar-bench: error: --config={path}: unknown key trainer.max_step (did you mean trainer.max_steps?); "
        "expected options of swar-bench fit (swar-bench fit --help)")


def test_every_typo_of_a_config_file_is_named_at_once(tmp_path, capsys):
    path = tmp_path / "run.yaml"
    path.write_text("trainer:\n  max_step: 10\n  acelerator: cpu\nmodel:\n  lrr: 0.1\ndata:\n  batchsize: 4\nzzz: 1\n")
    assert main(["fit", "--config", str(CONFIGS / "quickstart.yaml"), "--config", str(path)]) == 2
    assert one_error_line(capsys) == (
        f"swar-bench: error: --config={path}: unknown keys trainer.max_step (did you mean trainer.max_steps?), "
        "trainer.acelerator (did you mean trainer.accelerator?), model.lrr (did you mean model.lr?), "
        "data.batchsize (did you mean data.batch_size?), zzz; expected options of swar-bench fit (swar-bench fit --help)")


@pytest.mark.parametrize("config", sorted(p.name for p in CONFIGS.glob("*.yaml")))
def test_the_shipped_configs_have_no_unknown_key(fit_options, config):
    options, groups = fit_options
    assert unknown_config_keys(yaml.safe_load((CONFIGS / config).read_text()), options, groups=groups) == []


def _typo(name: str, i: int, kind: int) -> str:
    i %= len(name)
    return [name[:i] + name[i + 1:], name[:i] + "x" + name[i:], name[:i] + name[i] * 2 + name[i + 1:]][kind]


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_any_typos_of_real_options_are_all_named_with_their_option(tmp_path, capsys, fit_options, data):
    """The kind: one-character typos of any real `trainer.` / `model.` / `data.` / `checkpoint.`
    options in a config file are all named, in file order, in one line naming the file."""
    options, groups = fit_options
    leaves = sorted(o for o in options if o.count(".") == 1 and o.split(".")[0] in ("trainer", "model", "data", "checkpoint")
                    and not o.endswith(".help") and o not in groups and not any(p.startswith(o + ".") for p in options))
    chosen = data.draw(st.lists(st.sampled_from(leaves), min_size=1, max_size=4, unique=True))
    typos = []
    for option in chosen:
        group, name = option.split(".")
        typo = _typo(name, data.draw(st.integers(0, 50)), data.draw(st.integers(0, 2)))
        if f"{group}.{typo}" in options or not typo or any(t[1] == f"{group}.{typo}" for t in typos):
            continue
        typos.append((option, f"{group}.{typo}"))
    if not typos:
        return
    content: dict = {}
    for _, wrong in typos:
        group, name = wrong.split(".")
        content.setdefault(group, {})[name] = 1
    with tempfile.TemporaryDirectory(dir=tmp_path) as folder:
        path = Path(folder, "run.yaml")
        path.write_text(yaml.safe_dump(content, sort_keys=False))
        capsys.readouterr()
        assert main(["fit", "--config", str(CONFIGS / "quickstart.yaml"), "--config", str(path)]) == 2
        line = one_error_line(capsys)
    assert line.startswith(f"swar-bench: error: --config={path}: unknown key")
    named = [wrong for group in content for wrong in (f"{group}.{n}" for n in content[group])]
    positions = [line.index(f" {wrong}") for wrong in named]
    assert positions == sorted(positions)
    for option, wrong in typos:
        found = unknown_config_keys(content, options, groups=groups)
        assert (wrong, option) in found or any(k == wrong and s in options for k, s in found)


def test_a_typo_under_a_mechanisms_init_args_is_listed_with_the_files_other_typos(tmp_path, capsys):
    # the reported input: `d_modle: 64` under model.mechanism.init_args, beside a `max_step:` typo
    path = tmp_path / "run.yaml"
    path.write_text("trainer:\n  max_step: 10\nmodel:\n  mechanism:\n    class_path: swar_bench.mechanisms.GatedDeltaNet\n"
                    "    init_args:\n      d_modle: 64\n")
    assert main(["fit", "--config", str(CONFIGS / "quickstart.yaml"), "--config", str(path)]) == 2
    assert one_error_line(capsys) == (
        f"swar-bench: error: --config={path}: unknown keys trainer.max_step (did you mean trainer.max_steps?), "
        "model.mechanism.init_args.d_modle (did you mean model.mechanism.init_args.d_model?); expected options of "
        "swar-bench fit (swar-bench fit --help), and for model.mechanism.init_args the arguments of "
        "swar_bench.mechanisms.GatedDeltaNet (vocab_size, d_model, n_layers, n_heads, conv_size, chunk_size, mode, backend, "
        "mlp_ratio)")


def test_typos_in_nested_classes_callbacks_and_mqar_keys_are_listed_too(tmp_path, capsys):
    text = (CONFIGS / "mqar" / "figure2_t64.yaml").read_text()
    for right, wrong in (("monitor:", "monitr:"), (" d_model:", " d_modle:"), ("num_kv_pairs:", "num_kv_pair:")):
        assert right in text
        text = text.replace(right, wrong, 1)
    path = tmp_path / "mqar.yaml"
    path.write_text(text)
    assert main(["fit", "--config", str(path)]) == 2
    line = one_error_line(capsys)
    assert line.startswith(
        f"swar-bench: error: --config={path}: unknown keys trainer.callbacks[0].init_args.monitr (did you mean "
        "trainer.callbacks[0].init_args.monitor?), model.mechanism.init_args.mechanism.init_args.d_modle (did you mean "
        "model.mechanism.init_args.mechanism.init_args.d_model?), data.mqar.num_kv_pair (did you mean "
        "data.mqar.num_kv_pairs?); expected options of swar-bench fit")


@pytest.mark.parametrize("config", sorted(str(p.relative_to(CONFIGS)) for p in CONFIGS.glob("*/**/*.yaml")
                                          if p.parts[len(CONFIGS.parts)] not in ("studies", "referee")))
def test_the_shipped_nested_configs_have_no_unknown_key(fit_options, config):
    options, groups = fit_options
    takes: dict = {}
    assert unknown_config_keys(yaml.safe_load((CONFIGS / config).read_text()), options, groups=groups, takes=takes,
                               fields=nested_fields) == []
    assert takes == {}


def _zoo_args() -> list[tuple[str, str]]:
    from swar_bench import mechanisms
    from swar_bench.config_errors import class_arguments

    return [(name, arg) for name in sorted(mechanisms.MECHANISMS) for arg in class_arguments(name) or ()]


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_any_typos_of_init_args_are_named_beside_the_files_other_typos(tmp_path, capsys, data):
    """The kind: one-character typos of a zoo mechanism's constructor arguments under
    ``model.mechanism.init_args`` and of real ``trainer.`` options in one config file are all
    named in one line naming the file, each init arg typo with an argument of that mechanism."""
    name, arg = data.draw(st.sampled_from(_zoo_args()))
    from swar_bench.config_errors import class_arguments

    accepted = class_arguments(name)
    typo = _typo(arg, data.draw(st.integers(0, 50)), data.draw(st.integers(0, 2)))
    if not typo or typo in accepted:
        return
    content = {"model": {"mechanism": {"class_path": name, "init_args": {typo: 1}}}}
    if data.draw(st.booleans()):
        content["trainer"] = {"max_step": 1}
    with tempfile.TemporaryDirectory(dir=tmp_path) as folder:
        path = Path(folder, "run.yaml")
        path.write_text(yaml.safe_dump(content, sort_keys=False))
        capsys.readouterr()
        assert main(["fit", "--config", str(CONFIGS / "quickstart.yaml"), "--config", str(path)]) == 2
        line = one_error_line(capsys)
    assert line.startswith(f"swar-bench: error: --config={path}: unknown key")
    wrong = f"model.mechanism.init_args.{typo}"
    assert f" {wrong}" in line
    suggested = re.search(re.escape(wrong) + r" \(did you mean model\.mechanism\.init_args\.(\w+)\?\)", line)
    assert suggested is None or suggested.group(1) in accepted
    assert suggested is not None  # one character off a name of 3 or more: always close enough
    assert ("trainer.max_step (did you mean trainer.max_steps?)" in line) == ("trainer" in content)
    assert f"the arguments of {name} (" in line
