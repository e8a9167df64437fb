"""The announce line states a growing state at the run's own sequence length (fault: the T=64
MQAR fit of configs/mqar/figure2_t64.yaml printed "state 4,194,312 bytes/sequence at T=4,096
(grows)", while its study report uses 65,544 bytes at T=64)."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

from hypothesis import given, settings
from hypothesis import strategies as st

from swar_bench.harness.announce import (
    DOCUMENTED_SEQ_LEN,
    Announce,
    describe_mechanism,
    run_seq_len,
)
from swar_bench.mechanisms import GRU, CausalAttention
from swar_bench.mechanisms.protocol import state_bytes_at

CONFIGS = Path(__file__).resolve().parents[2] / "configs"


def _fake_trainer(datamodule) -> SimpleNamespace:
    return SimpleNamespace(is_global_zero=True, fast_dev_run=True, datamodule=datamodule)


def test_the_reported_t64_mqar_banner_states_the_state_at_t64(capsys):
    from swar_bench.datamodules.passkey_swar import PasskeySwarDataModule
    from swar_bench.lightning_cli import SwarBenchCLI
    from swar_bench.module import TBPTTModule

    cli = SwarBenchCLI(TBPTTModule, PasskeySwarDataModule, args=["--config", str(CONFIGS / "mqar" / "figure2_t64.yaml")],
                       run=False, parser_kwargs={"exit_on_error": False})
    capsys.readouterr()
    Announce("fit").setup(_fake_trainer(cli.datamodule), cli.model, "fit")
    line = capsys.readouterr().out.strip()
    assert line.startswith("swar-bench fit: ZoologyBackbone (swar_bench.mechanisms.zoology_backbone.ZoologyBackbone): ")
    assert ", state 65,544 bytes/sequence at T=64 (grows); " in line, line


def test_a_passkey_run_states_it_at_the_documented_length():
    passkey = SimpleNamespace(mqar=None)
    assert run_seq_len(passkey) == DOCUMENTED_SEQ_LEN == 4096
    attention = CausalAttention(vocab_size=40, d_model=16, n_layers=1)
    assert describe_mechanism(attention, run_seq_len(passkey)).endswith(
        f"state {state_bytes_at(attention, 1, 4096):,} bytes/sequence at T=4,096 (grows)")


ATTENTION = CausalAttention(vocab_size=40, d_model=8, n_layers=1)
FIXED = GRU(vocab_size=40, d_model=8, n_layers=1)


@settings(max_examples=40, deadline=None)
@given(seq_len=st.integers(1, 10**6).map(lambda t: 2 * t), mechanism=st.sampled_from([ATTENTION, FIXED]))
def test_any_mqar_length_is_the_one_stated(seq_len, mechanism):
    """The kind: whatever an MQAR run's input_seq_len, the line states the state after that many
    tokens, and says T only for a state that grows."""
    line = describe_mechanism(mechanism, run_seq_len(SimpleNamespace(mqar=SimpleNamespace(input_seq_len=seq_len))))
    size = state_bytes_at(mechanism, 1, seq_len)
    if mechanism is ATTENTION:
        assert line.endswith(f", state {size:,} bytes/sequence at T={seq_len:,} (grows)"), line
    else:
        assert line.endswith(f", state {size:,} bytes/sequence"), line
