"""Writing results: result.json and the PNG are written atomically and get the mode the umask allows."""

import json
import os
import stat

import pytest

from swar_bench.referee.report import plot_forgetting_curve, read_json, write_json


@pytest.mark.parametrize("umask", [0o022, 0o077])
def test_written_files_follow_the_umask(tmp_path, gru_result, umask):
    before = os.umask(umask)
    try:
        json_path = write_json(gru_result, tmp_path / "out" / "result.json")
        png_path = plot_forgetting_curve({"GRU": gru_result}, tmp_path / "out" / "curve.png")
    finally:
        os.umask(before)
    expected = 0o666 & ~umask  # what open() would give; mkstemp alone gives 0o600
    assert stat.S_IMODE(json_path.stat().st_mode) == expected
    assert stat.S_IMODE(png_path.stat().st_mode) == expected
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == ["curve.png", "result.json"]
    assert read_json(json_path) == json.loads(json.dumps(gru_result))
    assert png_path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_accuracy_and_loss_have_their_own_labelled_panels(gru_result):
    """Accuracy and probe loss are never drawn on one plot: two panels, accuracy on [0, 1], the
    loss axis in nats from 0 with the solved threshold inside it."""
    import matplotlib.pyplot as plt

    from swar_bench.referee.report import forgetting_curve_figure

    fig = forgetting_curve_figure({"GRU": gru_result})
    try:
        acc, loss = fig.axes
        assert acc.get_ylabel() == "needle accuracy" and loss.get_ylabel() == "probe loss (nats)"
        assert acc.get_ylim() == (-0.03, 1.03)
        low, high = loss.get_ylim()
        assert low == 0 and high >= gru_result["solved_threshold"]
        losses = [p["loss"] for p in gru_result["forgetting_curve"]]
        assert all(line.get_ydata().tolist() != losses for line in acc.get_lines())
        assert any(line.get_ydata().tolist() == losses for line in loss.get_lines())
    finally:
        plt.close(fig)
