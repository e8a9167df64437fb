"""Checkpoints are read weights-only whatever their spelling: a pickled payload, local or served
over HTTP, is refused in one line and never run; a checkpoint of swar-bench fit still resumes and
tests from a local path and from a URL."""

from __future__ import annotations

import contextlib
import os
import pickle
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from swar_bench.lightning_cli import main
from swar_bench.runtime.checkpoint_io import (
    CheckpointRefusedError,
    SafeCheckpointIO,
    load_checkpoint,
)

CONFIGS = Path(__file__).resolve().parents[2] / "configs"


@contextlib.contextmanager
def http_server(folder: Path) -> Iterator[str]:
    """``python -m http.server`` serving ``folder`` on a free loopback port; yields its base URL
    once it answers (at most 60 s) and stops it on the way out."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    proc = subprocess.Popen(
        [sys.executable, "-m", "http.server", str(port), "--bind", "127.0.0.1", "--directory", str(folder)],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                urllib.request.urlopen(base + "/", timeout=1).close()
                break
            except (urllib.error.URLError, ConnectionError, TimeoutError):
                if proc.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"http.server on port {port} did not answer") from None
                time.sleep(0.05)  # polling an event (the server answering), not a fixed wait
        yield base
    finally:
        proc.kill()
        proc.wait()


class Payload:
    """Unpickling it runs ``action(*args)``: creates ``marker`` (what an attacker's code would do)."""

    def __init__(self, kind: str, marker: Path) -> None:
        self.kind, self.marker = kind, str(marker)

    def __reduce__(self):
        if self.kind == "open":
            return (open, (self.marker, "w"))
        if self.kind == "system":
            return (os.system, (f"touch '{self.marker}'",))
        if self.kind == "exec":
            return (exec, (f"open({self.marker!r}, 'w').close()",))
        return (subprocess.call, (["touch", self.marker],))


PAYLOAD_KINDS = ("open", "system", "exec", "subprocess")


def write_evil(path: Path, kind: str, marker: Path, legacy: bool = False) -> None:
    """A checkpoint-looking dict whose unpickling would create ``marker``: torch's zip format, or a
    plain pickle (``legacy``)."""
    obj = {"state_dict": {"w": torch.zeros(2)}, "global_step": 3, "hyper_parameters": {"x": Payload(kind, marker)}}
    path.parent.mkdir(parents=True, exist_ok=True)
    if legacy:
        with open(path, "wb") as handle:
            pickle.dump(obj, handle)
    else:
        torch.save(obj, path)


def _common(tmp_path: Path) -> list[str]:
    return [
        "--config", str(CONFIGS / "quickstart.yaml"), "--model.mechanism=GRU", "--model.mechanism.init_args.d_model=8",
        "--model.mechanism.init_args.n_layers=1", "--data.train_configs=[32]", "--data.batch_size=2",
        "--data.val_configs=[32]", "--data.test_configs=[32]", "--data.eval_examples=2", "--model.tbptt_steps=1000",
        "--trainer.val_check_interval=2", f"--trainer.logger.init_args.save_dir={tmp_path / 'runs'}",
        "--trainer.enable_progress_bar=false", "--trainer.enable_model_summary=false",
    ]


def _swar_lines(capsys) -> list[str]:
    captured = capsys.readouterr()
    assert "Traceback" not in captured.err + captured.out
    return [ln for ln in captured.err.splitlines() if ln.startswith("swar-bench")]


@pytest.mark.parametrize("remote", [False, True])
def test_a_payload_checkpoint_is_refused_in_one_line_and_not_run(tmp_path, capsys, remote):
    marker = tmp_path / "PAYLOAD_RAN"
    evil = tmp_path / "served" / "evil.ckpt"
    write_evil(evil, "open", marker)
    with http_server(evil.parent) if remote else contextlib.nullcontext(None) as base:
        path = f"{base}/evil.ckpt" if remote else str(evil)
        code = main(["test", *_common(tmp_path), f"--ckpt_path={path}"])
    err = _swar_lines(capsys)
    assert code != 0
    assert not marker.exists()
    assert err == [
        (f"swar-bench: error: --ckpt_path={path}: not a checkpoint file torch can read with weights_only=True, refused "
         "(unsupported global io.open); expected a .ckpt written by swar-bench fit"),
    ]
    assert not (tmp_path / "runs").exists()  # refused before anything was written


SPELLINGS = ("relative", "absolute with spaces", "file://", "http://", "http:// with spaces")


@pytest.fixture(scope="module")
def served(tmp_path_factory) -> Iterator[tuple[Path, str]]:
    root = tmp_path_factory.mktemp("served")
    with http_server(root) as base:
        yield root, base


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(kind=st.sampled_from(PAYLOAD_KINDS), spelling=st.sampled_from(SPELLINGS), legacy=st.booleans(),
       name=st.text(alphabet="abcxyz_-", min_size=1, max_size=8))
def test_no_payload_runs_whatever_the_path_spelling(served, monkeypatch, kind, spelling, legacy, name):
    root, base = served
    marker = root / f"ran-{kind}-{name}"
    folder = root / ("with spaces" if "spaces" in spelling else "plain")
    evil = folder / f"{name} {kind}.ckpt" if "spaces" in spelling else folder / f"{name}.ckpt"
    write_evil(evil, kind, marker, legacy=legacy)
    monkeypatch.chdir(root)
    path = {
        "relative": os.path.relpath(evil, root),
        "absolute with spaces": str(evil),
        "file://": evil.as_uri(),
        "http://": f"{base}/{urllib.parse.quote(str(evil.relative_to(root)))}",
        "http:// with spaces": f"{base}/{urllib.parse.quote(str(evil.relative_to(root)))}",
    }[spelling]
    for load in (load_checkpoint, SafeCheckpointIO().load_checkpoint):
        with pytest.raises(CheckpointRefusedError) as refused:
            load(path)
        assert "\n" not in str(refused.value) and str(refused.value).startswith(f"{path}: refused: ")
    assert not marker.exists()
    evil.unlink()


def test_a_fit_checkpoint_tests_and_resumes_from_a_path_and_a_url(tmp_path, capsys):
    common = _common(tmp_path)
    ckpt = tmp_path / "ckpt"
    assert main(["fit", *common, f"--checkpoint.dirpath={ckpt}", "--trainer.max_steps=2"]) == 0
    assert load_checkpoint(ckpt / "last.ckpt")["global_step"] == 2
    # a checkpoint Lightning writes (hyper-parameters, loops, callbacks, data stream) is weights-only
    assert sorted(load_checkpoint(ckpt / "last.ckpt")) == sorted(torch.load(ckpt / "last.ckpt", weights_only=True))
    with http_server(ckpt) as base:
        url = f"{base}/last.ckpt"
        assert main(["test", *common, f"--ckpt_path={url}", "--trainer.logger=false",
                     f"--trainer.default_root_dir={tmp_path / 'tested_url'}"]) == 0
        resumed = tmp_path / "resumed"
        assert main(["fit", *common, f"--ckpt_path={url}", f"--checkpoint.dirpath={resumed}", "--trainer.max_steps=4"]) == 0
    assert load_checkpoint(resumed / "last.ckpt")["global_step"] == 4
    assert main(["test", *common, f"--ckpt_path={ckpt / 'last.ckpt'}"]) == 0
    capsys.readouterr()


def test_lightning_asking_for_weights_only_false_still_gets_weights_only(tmp_path):
    marker = tmp_path / "PAYLOAD_RAN"
    write_evil(tmp_path / "evil.ckpt", "system", marker)
    with pytest.raises(CheckpointRefusedError):
        SafeCheckpointIO().load_checkpoint(tmp_path / "evil.ckpt", weights_only=False)
    assert not marker.exists()


@pytest.mark.parametrize("served", [True, False])
def test_a_url_that_cannot_be_reached_or_is_missing_says_so(tmp_path, capsys, served):
    """The fresh-user fault: a URL whose server refuses the connection was "no such file"; fsspec
    raises FileNotFoundError for both, so the line names both readings."""
    import socket

    if served:
        with http_server(tmp_path) as base:
            url = f"{base}/missing.ckpt"
            code = main(["test", *_common(tmp_path), f"--ckpt_path={url}"])
    else:
        with socket.socket() as s:  # a port nothing listens on
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        url = f"http://127.0.0.1:{port}/last.ckpt"
        code = main(["test", *_common(tmp_path), f"--ckpt_path={url}"])
    assert code == 2
    assert _swar_lines(capsys) == [
        (f"swar-bench: error: --ckpt_path={url}: not found, or the server cannot be reached; expected a URL that "
        "serves a .ckpt written by swar-bench fit")
    ]


def test_test_reads_a_checkpoint_whatever_the_training_stream_settings(tmp_path, capsys):
    """The fresh-user fault: `test --ckpt_path last` with another --data.batch_size was refused with
    "resume with the same data settings"; a test reads the evaluation splits only. A resumed fit
    still refuses other stream settings."""
    common = _common(tmp_path)
    assert main(["fit", *common, "--trainer.max_steps=2"]) == 0
    capsys.readouterr()
    assert main(["test", *common, "--ckpt_path=last", "--data.batch_size=4", "--data.seed=3"]) == 0
    capsys.readouterr()
    assert main(["fit", *common, "--ckpt_path=last", "--data.batch_size=4", "--trainer.max_steps=4"]) != 0
    assert any("resume with the same data settings" in line for line in _swar_lines(capsys))
