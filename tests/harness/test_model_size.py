"""A mechanism whose parameters cannot fit in memory is refused in one line before it is built
(fit and check-mechanism), instead of an allocator traceback or the OOM killer."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from swar_bench.lightning_cli import main
from swar_bench.mechanisms import GRU, LSTM
from swar_bench.mechanisms.check_cli import main as check_main
from swar_bench.runtime import memory


def _lines(capsys) -> list[str]:
    captured = capsys.readouterr()
    assert "Traceback" not in captured.err + captured.out
    return [ln for ln in captured.err.splitlines() if ln.startswith("swar-bench")]


def test_the_reported_d_model_is_refused_in_one_line_by_fit_and_check_mechanism(capsys, tmp_path):
    assert main(["fit", "--model.mechanism=GRU", "--model.mechanism.init_args.d_model=1000000000",
                 f"--trainer.logger.init_args.save_dir={tmp_path}"]) == 2
    (line,) = _lines(capsys)
    assert line.startswith("swar-bench: error: --model.mechanism=swar_bench.mechanisms.GRU (")
    assert "d_model=1000000000" in line and "overflows 64-bit byte counts" in line
    assert line.endswith("expected a smaller model (d_model, n_layers, vocab_size)")
    assert list(tmp_path.iterdir()) == []  # refused before anything was written
    assert check_main(["GRU", "--init_args", '{"d_model": 1000000000}']) == 2
    (line,) = _lines(capsys)
    assert line.startswith("swar-bench check-mechanism: error: ") and "overflows 64-bit byte counts" in line
    # a size that is counted but does not fit: d_model=100000 is 120 billion parameters for a GRU
    assert main(["fit", "--model.mechanism=GRU", "--model.mechanism.init_args.d_model=100000",
                 f"--trainer.logger.init_args.save_dir={tmp_path}"]) == 2
    (line,) = _lines(capsys)
    assert " parameters need " in line and "weights, gradients and Adam's two moments" in line, line


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(cls=st.sampled_from([GRU, LSTM]), d_model=st.integers(1, 64), n_layers=st.integers(1, 3),
       have=st.integers(1, 10**7), copies=st.sampled_from([1, 2, 4]))
def test_a_model_is_refused_exactly_when_its_copies_exceed_the_memory(monkeypatch, cls, d_model, n_layers, have, copies):
    monkeypatch.setattr(memory, "available_bytes", lambda cuda=False: have)
    count = sum(p.numel() for p in cls(d_model=d_model, n_layers=n_layers).parameters())
    assert memory.parameter_count(cls, {"d_model": d_model, "n_layers": n_layers}) == count
    if count * 4 * copies > have:
        with pytest.raises(ValueError, match=f"^X: {count:,} parameters need ") as refused:
            memory.check_fits(cls, {"d_model": d_model, "n_layers": n_layers}, "X", copies=copies)
        assert "\n" not in str(refused.value)
    else:
        memory.check_fits(cls, {"d_model": d_model, "n_layers": n_layers}, "X", copies=copies)


def test_arguments_the_constructor_refuses_are_left_to_it():
    assert memory.parameter_count(GRU, {"d_model": -4}) is None
    memory.check_fits(GRU, {"d_model": -4}, "X")  # the real construction names the argument


def test_counting_leaves_every_random_generator_as_it_was():
    import random

    import numpy as np
    import torch

    torch.manual_seed(3)
    random.seed(3)
    np.random.seed(3)
    memory.parameter_count(GRU, {"d_model": 16})
    drawn = (torch.rand(3), random.random(), np.random.rand())
    torch.manual_seed(3)
    random.seed(3)
    np.random.seed(3)
    assert torch.equal(torch.rand(3), drawn[0]) and random.random() == drawn[1] and np.random.rand() == drawn[2]
