"""A --device the referee cannot use is refused in one line naming the value and what runs here
(fault: `swar-bench referee --device=bogus` printed torch's list of its 20 device types, "Expected
one of cpu, cuda, ipu, xpu, mkldnn, opengl, ... device type at start of device string: bogus",
and `--device=cuda` without CUDA "Torch not compiled with CUDA enabled")."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from swar_bench.referee.cli import main

QUICK = str(Path(__file__).resolve().parents[2] / "configs" / "referee" / "quick.yaml")
NO_CUDA = not torch.cuda.is_available()


def _line(capsys, device: str, tmp_path) -> tuple[int, list[str]]:
    code = main(["--config", QUICK, f"--device={device}", "--out", str(tmp_path / "out")])
    return code, [ln for ln in capsys.readouterr().err.splitlines() if ln.startswith("swar-bench")]


@pytest.mark.skipif(not NO_CUDA, reason="CUDA is available here")
def test_the_reported_devices(tmp_path, capsys):
    assert _line(capsys, "bogus", tmp_path) == (2, [
        ("swar-bench referee: error: --device=bogus: unknown device type; expected cpu, or cuda / cuda:N where a CUDA "
        "device is available (here: cpu)")])
    assert _line(capsys, "cuda", tmp_path) == (2, [
        "swar-bench referee: error: --device=cuda: no CUDA device is available on this machine; expected cpu"])
    assert _line(capsys, "cude", tmp_path)[1][0].endswith("unknown device type (did you mean cuda?); expected cpu, or "
                                                          "cuda / cuda:N where a CUDA device is available (here: cpu)")
    assert not (tmp_path / "out").exists()  # refused before any work; the folder made for --out taken back


def _usable(device: str) -> bool:
    try:
        return torch.device(device).type == "cpu"
    except (RuntimeError, ValueError):
        return False


@pytest.mark.skipif(not NO_CUDA, reason="CUDA is available here")
@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(device=st.one_of(
    st.text(st.characters(codec="ascii", exclude_characters="\n\r\x00"), max_size=8),
    st.builds(lambda kind, index: f"{kind}:{index}", st.sampled_from(["cpu", "cuda", "CPU", "cuda0", "mps", "xla"]),
              st.text("0123456789-x ", max_size=3)),
).filter(lambda d: not _usable(d)))
def test_any_device_not_usable_here_is_one_line(tmp_path_factory, capsys, device):
    tmp_path = tmp_path_factory.mktemp("d")
    code, lines = _line(capsys, device, tmp_path)
    assert code == 2 and len(lines) == 1, lines
    line = lines[0]
    assert line.startswith("swar-bench referee: error: --device="), line
    assert line.endswith(("; expected cpu", "(here: cpu)")), line
    assert "ipu" not in line and "mkldnn" not in line, line  # torch's list of device types stays out
    assert not (tmp_path / "out").exists()
