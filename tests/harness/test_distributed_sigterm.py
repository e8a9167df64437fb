"""SIGTERM ends a distributed fit (fault: `timeout 120 swar-bench fit --config configs/quickstart.yaml
--trainer.devices=3` and `kill` of rank 0 hung the run: Lightning's SIGTERM handler runs a broadcast
inside the signal handler while the other ranks are in the backward pass's all-reduce, and the
ranks waited for each other until the collective timeout): ``swar_bench.callbacks.distributed_stop``."""

from __future__ import annotations

import contextlib
import io
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from types import SimpleNamespace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from lightning.pytorch.trainer.states import TrainerFn

from swar_bench.callbacks.distributed_stop import DistributedStop
from swar_bench.harness.errors import exit_status
from swar_bench.harness.stops import PEER_GONE
from swar_bench.utils.ranks import LAUNCHER_PID
from tests.harness.cli_lines import QUICKSTART
from tests.harness.test_rank_guard import _alive, _children, _environ

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
@pytest.mark.parametrize("who", ["rank 0", "every rank", "rank 0, mostly validating"])
def test_sigterm_during_training_ends_every_rank_with_one_line(tmp_path, who):
    """The reported fault with two ranks: SIGTERM to rank 0 only (`timeout`, `kill PID`) or to
    every process (a scheduler, `kill -- -PGID`) once both ranks train: exit 143 in seconds, one
    line naming the checkpoint to resume from, no rank left. The collective timeout is 300 s, so a
    hang fails the test long before it would end by itself. "mostly validating": a validation of
    32 batches per rank after every training batch, so that the signal most likely lands in one and
    the stop waits for the next training batch's end (a CI run once met the race of a signal at a
    validation's end: rank 0 stopped inside it while rank 1 already trained and failed in gloo's
    `Connection closed by peer`, a traceback; the unit tests below pin that down)."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    env.pop(LAUNCHER_PID, None)
    argv = [sys.executable, "-m", "swar_bench.cli", "fit", "--config", QUICKSTART, "--trainer.devices=2",
            "--trainer.max_steps=100000", "--collective_timeout=300", "--trainer.enable_progress_bar=false"]
    if who.endswith("validating"):
        argv += ["--trainer.val_check_interval=1", "--data.eval_examples=4096"]
    proc = subprocess.Popen(argv, cwd=tmp_path, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                            start_new_session=True)
    ranks: list[int] = []
    try:
        deadline = time.monotonic() + 300  # a bound on a hang (imports are slow on a loaded machine)
        while not ranks and proc.poll() is None and time.monotonic() < deadline:
            ranks = [p for p in _children(proc.pid) if b"LOCAL_RANK=1" in _environ(p)]
            time.sleep(0.05)
        assert ranks, proc.communicate(timeout=60)
        while not list((tmp_path / "runs").rglob("*.ckpt")) and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)  # the event: a checkpoint of a step, written once both ranks trained
        assert proc.poll() is None, proc.communicate(timeout=60)
        sent = time.monotonic()
        if who.startswith("rank 0"):
            proc.send_signal(signal.SIGTERM)
        else:
            os.killpg(proc.pid, signal.SIGTERM)
        _, err = proc.communicate(timeout=240)  # far below the 300 s collective timeout
        took = time.monotonic() - sent
        ended = time.monotonic() + 60  # rank 1 stops after the same batch; its exit may trail rank 0's
        while any(_alive(pid) for pid in ranks) and time.monotonic() < ended:
            time.sleep(0.05)
        outlived = [pid for pid in ranks if _alive(pid)]  # before the clean-up below kills whatever is left
    finally:
        for pid in _children(proc.pid) + ranks + [proc.pid]:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        proc.wait()
    lines = [line for line in err.splitlines() if line.startswith("swar-bench")]
    assert proc.returncode == 143, err[-3000:]
    assert lines[-1].startswith("swar-bench: terminated (SIGTERM); fit --ckpt_path last resumes from "), lines
    assert sum("terminated" in line for line in lines) == 1, lines  # one line, from rank 0
    assert "Traceback" not in err and took < 240
    assert not outlived, "rank 1 outlived the run by more than 60 s"


class _Strategy:
    """One rank's strategy in a simulated world: ``reduce_boolean_decision`` is the OR of every
    rank's flag at this batch (what the all-reduce computes); ``launcher`` records forwarded signals."""

    def __init__(self, world: list[DistributedStop], rank: int) -> None:
        self.world, self.rank, self.calls = world, rank, []
        self.launcher = SimpleNamespace(kill=lambda signum: self.calls.append(("kill", signum))) if rank == 0 else None

    def reduce_boolean_decision(self, decision: bool, all: bool = True) -> bool:
        self.calls.append(("reduce", decision))
        assert all is False
        return any(cb.requested for cb in self.world)


def _trainer(strategy: _Strategy, step: int = 0, fn: str = "fit") -> SimpleNamespace:
    return SimpleNamespace(world_size=len(strategy.world), strategy=strategy, training=True, sanity_checking=False,
                           global_step=step, _signal_connector=SimpleNamespace(received_sigterm=False),
                           state=SimpleNamespace(fn=TrainerFn(fn)))


PHASES = {"training": (True, False), "validation": (False, False), "sanity check": (False, True)}
"""A fit's phases: (trainer.training, trainer.sanity_checking)."""


@settings(max_examples=100, deadline=None)
@given(world=st.integers(2, 4), batches=st.integers(1, 12), data=st.data())
def test_every_rank_stops_after_the_same_batch_whichever_ranks_get_the_signal(world, batches, data):
    """The kind: SIGTERM delivered to any subset of the ranks, each at any batch (or never): every
    rank marks the Trainer as terminated after the same batch, the first one by whose end a rank
    had it; no rank before; the handler itself runs no collective and forwards once (rank 0)."""
    arrives = data.draw(st.lists(st.one_of(st.none(), st.integers(0, batches - 1)), min_size=world, max_size=world),
                        label="batch each rank's signal arrives in (None: never)")
    phases = data.draw(st.lists(st.sampled_from(sorted(PHASES)), min_size=world, max_size=world),
                       label="the phase of the fit each rank is in when it arrives (validation: before that batch)")
    callbacks = [DistributedStop() for _ in range(world)]
    strategies = [_Strategy(callbacks, rank) for rank in range(world)]
    trainers = [_trainer(s) for s in strategies]
    for cb, trainer in zip(callbacks, trainers, strict=True):
        cb._trainer = trainer  # as _install leaves it once training starts (the handler is not installed here)
    stopped = [None] * world
    for batch in range(batches):
        for rank, cb in enumerate(callbacks):
            if arrives[rank] == batch:
                before = list(strategies[rank].calls)
                trainers[rank].training, trainers[rank].sanity_checking = PHASES[phases[rank]]
                cb._on_sigterm(signal.SIGTERM, None)
                cb._on_sigterm(signal.SIGTERM, None)  # a second one changes nothing
                assert [c for c in strategies[rank].calls[len(before):] if c[0] == "reduce"] == []
                # no rank stops on its own, in whatever phase of the fit: only the agreement marks it
                assert not trainers[rank]._signal_connector.received_sigterm
                trainers[rank].training, trainers[rank].sanity_checking = PHASES["training"]
        for rank, (cb, trainer) in enumerate(zip(callbacks, trainers, strict=True)):
            trainer.global_step = batch + 1
            cb.on_train_batch_end(trainer, None, None, None, batch)
            if trainer._signal_connector.received_sigterm and stopped[rank] is None:
                stopped[rank] = batch
        if any(s is not None for s in stopped):
            break  # Lightning raises SIGTERMException on every marked rank after this batch
    first = min((b for b in arrives if b is not None), default=None)
    assert stopped == [first] * world
    if first is not None:
        assert {cb.stopped_at for cb in callbacks} == {first + 1}
    reached = arrives[0] is not None and arrives[0] == first  # rank 0's signal came before the ranks stopped
    assert strategies[0].calls.count(("kill", signal.SIGTERM)) == (1 if reached else 0)


@pytest.mark.parametrize("fn", ["validate", "test", "predict"])
def test_outside_a_fit_the_signal_marks_the_trainer_at_once(fn):
    """validate, test, predict: no training batch comes, so the flag marks the Trainer at once
    (Lightning then stops at its next batch), still without a collective."""
    callbacks: list[DistributedStop] = [DistributedStop(), DistributedStop()]
    strategy = _Strategy(callbacks, 0)
    trainer = _trainer(strategy, fn=fn)
    trainer.training = False
    callbacks[0]._trainer = trainer
    callbacks[0]._on_sigterm(signal.SIGTERM, None)
    assert trainer._signal_connector.received_sigterm and strategy.calls == [("kill", signal.SIGTERM)]


@pytest.mark.parametrize("phase", sorted(PHASES))
def test_in_a_fit_the_signal_waits_for_the_end_of_a_training_batch(phase):
    """The CI fault: SIGTERM reached rank 0 in a fit's validation, which marked its Trainer at once;
    rank 0 stopped inside validation while rank 1, already training, waited in its next collective
    for it and ended in gloo's `Connection closed by peer` traceback. In every phase of a fit the
    signal only flags; both ranks stop after the same training batch."""
    callbacks = [DistributedStop(), DistributedStop()]
    strategies = [_Strategy(callbacks, rank) for rank in range(2)]
    trainers = [_trainer(s) for s in strategies]
    for cb, trainer in zip(callbacks, trainers, strict=True):
        cb._trainer = trainer
    trainers[0].training, trainers[0].sanity_checking = PHASES[phase]
    callbacks[0]._on_sigterm(signal.SIGTERM, None)
    assert not trainers[0]._signal_connector.received_sigterm and strategies[0].calls == [("kill", signal.SIGTERM)]
    for cb, trainer in zip(callbacks, trainers, strict=True):
        cb.on_train_batch_end(trainer, None, None, None, 0)
    assert [t._signal_connector.received_sigterm for t in trainers] == [True, True]


@settings(max_examples=30, deadline=None)
@given(words=st.sampled_from(PEER_GONE), before=st.text(max_size=30), after=st.text(max_size=30),
       upper=st.booleans(), launched=st.booleans())
def test_a_launched_rank_whose_peer_ended_exits_quietly(words, before, after, upper, launched):
    """The kind of rank 1's traceback: a collective of a rank we launched fails because rank 0's
    process ended (gloo: `RuntimeError: [.../pair.cc:553] Connection closed by peer [127.0.0.1]:46313`):
    rank 0 says why the run ended, this rank exits 143 printing nothing. Outside a launched rank the
    error is not ours to explain (None: raised again)."""
    err = RuntimeError(f"{before}{words.upper() if upper else words}{after}")
    env = {"LOCAL_RANK": "1", LAUNCHER_PID: "12345"} if launched else {"LOCAL_RANK": "0"}
    with pytest.MonkeyPatch.context() as mp, contextlib.redirect_stderr(io.StringIO()) as printed:
        for key, value in env.items():
            mp.setenv(key, value)
        if not launched:
            mp.delenv(LAUNCHER_PID, raising=False)
        status = exit_status(err, ["fit"], ["fit"])
    assert (status, printed.getvalue()) == ((143, "") if launched else (None, ""))


def test_the_reported_peer_error_of_rank_1_is_quiet(monkeypatch, capsys):
    monkeypatch.setenv("LOCAL_RANK", "1")
    monkeypatch.setenv(LAUNCHER_PID, "12345")
    err = RuntimeError("[/__w/pytorch/pytorch/third_party/gloo/gloo/transport/tcp/pair.cc:553] Connection closed by "
                       "peer [127.0.0.1]:46313")
    assert exit_status(err, ["fit"], ["fit"]) == 143
    assert capsys.readouterr().err == ""


def test_a_one_process_run_keeps_lightnings_handler():
    before = signal.getsignal(signal.SIGTERM)
    trainer = SimpleNamespace(world_size=1)
    DistributedStop()._install(trainer)
    assert signal.getsignal(signal.SIGTERM) is before
