"""An MQAR pair count typed on the command line that the config file's length cannot hold is
named as typed (fault: `fit --config configs/mqar/figure2_t64.yaml --data.mqar.num_kv_pairs=1000`
blamed the config file's `data.mqar.input_seq_len=64`, which the user had not touched)."""

from __future__ import annotations

from pathlib import Path

from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from swar_bench.lightning_cli import main
from tests.harness.cli_lines import one_error_line

T64 = str(Path(__file__).resolve().parents[2] / "configs" / "mqar" / "figure2_t64.yaml")


def test_the_reported_pair_count_is_named_as_typed(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert main(["fit", "--config", T64, "--data.mqar.num_kv_pairs=1000"]) == 2
    assert one_error_line(capsys, "swar-bench") == (
        "swar-bench: error: --data.mqar.num_kv_pairs=1000: expected num_kv_pairs x (2 x num_passes + 2) <= "
        "input_seq_len=64 (at most 16 pairs at num_passes=1), or a longer --data.mqar.input_seq_len")
    assert list(tmp_path.iterdir()) == []


@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(pairs=st.integers(9, 40), passes=st.integers(2, 4), which=st.sampled_from(["pairs", "passes", "both"]))
def test_any_typed_pairs_or_passes_the_length_cannot_hold_are_named(tmp_path_factory, capsys, monkeypatch, pairs,
                                                                    passes, which):
    """The kind: num_kv_pairs and/or num_passes typed, the length (64) from the config file: when
    pairs x (2 passes + 2) > 64 the line names the option typed last, with the most pairs that fit."""
    flags = {"pairs": [f"--data.mqar.num_kv_pairs={pairs}"], "passes": [f"--data.mqar.num_passes={passes}"],
             "both": [f"--data.mqar.num_kv_pairs={pairs}", f"--data.mqar.num_passes={passes}"]}[which]
    k, p = (4 if which == "passes" else pairs), (1 if which == "pairs" else passes)
    assume(k * (2 * p + 2) > 64)  # else it fits: nothing to refuse
    monkeypatch.chdir(tmp_path_factory.mktemp("m"))
    assert main(["fit", "--config", T64, *flags]) == 2
    last = flags[-1]
    assert one_error_line(capsys, "swar-bench") == (
        f"swar-bench: error: {last}: expected num_kv_pairs x (2 x num_passes + 2) <= input_seq_len=64 (at most "
        f"{64 // (2 * p + 2)} pairs at num_passes={p}), or a longer --data.mqar.input_seq_len")
