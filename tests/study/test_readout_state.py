"""A state that grows with the tokens seen is reported at the read-out, not empty (issue "faults
by whole kind"): the frontier table gave LogLinearAttention 4,624 state bytes, its state before
the first token (the fit record's ``state_bytes(1)``), below every fixed-size learner, while
after the 972 tokens of a mean n256 example it holds 10 levels, 168,464 bytes. The kind: every
mechanism of a study, at any read-out N: fixed-size states as recorded, growing ones after the
mean example's tokens, in the report, its JSON and the site."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from swar_bench.callbacks.length_curriculum import expected_tokens_per_example
from swar_bench.mechanisms.protocol import is_fixed_size, state_bytes_at
from swar_bench.mechanisms.registry import resolve_class
from swar_bench.study.commands import mechanism_class, mechanism_facts, readout_state, state_text
from swar_bench.study.spec import MechanismSpec, load_study

ROOT = Path(__file__).resolve().parents[2]
FRONTIER = load_study(ROOT / "configs" / "studies" / "frontier.yaml")
BY_NAME = {m.name: m for m in FRONTIER.mechanisms}


def test_the_reported_log_linear_state_is_taken_at_the_read_out():
    m = BY_NAME["LogLinearAttention"]
    recorded = mechanism_facts(m)["state_bytes"]
    assert recorded == 4_624  # the record: the conv's 4,608 bytes and a position, no level yet
    assert readout_state(m, 256, recorded) == (168_464, 972)  # 4,624 + 10 levels of 16,384
    assert state_text((168_464, 972)) == "168,464 at T=972 (grows)"
    assert state_text((20_992, None)) == "20,992"


def test_the_frontier_report_and_site_say_the_grown_state(tmp_path):
    from swar_bench.study.report import collect, summary, write_report
    from swar_bench.study.site import leaderboard

    write_report(FRONTIER, tmp_path)
    text = (tmp_path / "frontier.md").read_text()
    row = next(line for line in text.splitlines() if line.startswith("| LogLinearAttention | 3 |"))
    assert "| 168,464 at T=972 (grows) |" in row
    assert "a state that grows with the tokens seen is taken after the T tokens of a mean n256 example" in text
    results = collect(FRONTIER)
    rows = {r["mechanism"]: r for r in summary(FRONTIER, results)["mechanisms"]}
    assert (rows["LogLinearAttention"]["state_bytes"], rows["LogLinearAttention"]["state_tokens"]) == (168_464, 972)
    assert rows["DeltaNet"]["state_bytes"] == 20_992 and "state_tokens" not in rows["DeltaNet"]
    site = {r["name"]: r for r in leaderboard(FRONTIER, results)}
    assert site["LogLinearAttention"]["cells"][0]["text"] == "168,464 at T=972 (grows)"
    assert site["DeltaNet"]["cells"][0]["text"] == "20,992"


@settings(max_examples=25, deadline=None)
@given(name=st.sampled_from(sorted(BY_NAME)), n_writes=st.integers(1, 16_384))
def test_any_mechanism_at_any_read_out_has_the_state_it_holds_there(name, n_writes):
    m = BY_NAME[name]
    class_path, init_args = mechanism_class(m)
    built = resolve_class(class_path)(**init_args)
    recorded = int(built.state_bytes(1))
    tokens = round(expected_tokens_per_example(n_writes))
    n_bytes, at = readout_state(m, n_writes, recorded)
    if is_fixed_size(built):
        assert (n_bytes, at) == (recorded, None)
    else:
        assert (n_bytes, at) == (state_bytes_at(built, 1, tokens), tokens)
        assert n_bytes > recorded  # a sequence of the read-out holds more than the empty state


def test_a_growing_class_path_of_a_study_is_taken_at_the_read_out():
    # full attention's KV cache: 2 * n_layers * T * d_model * 4 bytes after T tokens
    m = MechanismSpec(name="Attention_tiny", config=None, class_path="CausalAttention",
                      init_args={"vocab_size": 40, "d_model": 8, "n_layers": 1})
    assert readout_state(m, 32, 0) == (2 * 1 * 132 * 8 * 4, 132)


@pytest.mark.parametrize("n_writes", [32, 256, 1024])
def test_the_read_out_tokens_are_the_task_cards_mean_length(n_writes):
    assert readout_state(BY_NAME["LogLinearAttention"], n_writes, 4_624)[1] == round(12 + 3.75 * n_writes)
