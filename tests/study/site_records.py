"""A study of hand-written records for the results-site tests (the pattern of test_report.py), with
provenance in every record and mechanisms whose numbers differ so a sort has something to order."""

from __future__ import annotations

from pathlib import Path

from swar_bench.study.spec import StudySpec, load_study
from tests.study.test_report import BASE, _fit_record, _test_record, _write

COMMAND = "swar-bench fit --config 'base config.yaml' --model.lr=0.003 --note=<kept & escaped>"
ENVIRONMENT = {"python": "3.11.2", "torch": "2.13.0+cpu", "lightning": "2.6.1", "device": "Test CPU <x86_64>"}
LEARNERS = {
    # name: (state_bytes, n_params, flops_per_token, per-seed (passkey_exact, ar_valid, ar_expired_stale))
    "Keeper": (4096, 1234, 5.0e4, ((1.0, 0.8, 0.9), (1.0, 0.6, 0.7), (0.0, 0.7, 0.5))),
    "Decay0.9-conv4": (512, 900, 2.5e3, ((0.0, 0.9, 0.95), (0.0, 0.85, 0.9), (0.0, 0.95, 0.9))),
    "Wide_state": (65536, 20000, 1.0e6, ((1.0, 0.5, 0.4), (1.0, 0.55, 0.35), (1.0, 0.6, 0.3))),
    "Borrow": (2048, 700, 1.0e4, ((0.0, 0.4, 0.2), (0.0, 0.45, 0.25), (0.0, 0.5, 0.3))),
}
"""Mechanisms that pass the gate at lr 3e-3 on every seed."""
BORROWERS = {"Borrow": "Keeper"}
"""Arms that run at the learning rate another mechanism chose (``learning_rate_from``)."""
NON_LEARNER = "Flat"
PENDING = "Pending"


def _provenance(record: dict, wall_s: float) -> dict:
    return {**record, "command": COMMAND, "environment": ENVIRONMENT, "wall_s": wall_s}


def make_study(tmp_path: Path) -> StudySpec:
    """Write the study file and its records under ``tmp_path`` and load it."""
    (tmp_path / "base.yaml").write_text(BASE)
    records = tmp_path / "records"
    records.mkdir()
    path = tmp_path / "study.yaml"
    names = [*LEARNERS, NON_LEARNER, PENDING]
    path.write_text(
        f"name: toy\nconfig: {tmp_path / 'base.yaml'}\nrecords: {records}\nout: {tmp_path / 'runs'}\n"
        "learning_rates: [1.0e-3, 3.0e-3]\nextra_learning_rates: {below: [], above: []}\n"
        "selection_seeds: 1\nseeds: 3\nreadout_n: 256\nmechanisms:\n"
        + "".join(
            f"  - {{name: {name}, class_path: GRU, init_args: {{d_model: 8}}"
            + (f", learning_rate_from: {BORROWERS[name]}" if name in BORROWERS else "")
            + "}\n"
            for name in names
        )
    )
    for name, (state_bytes, n_params, flops, seeds) in LEARNERS.items():
        if name not in BORROWERS:
            low = f"{name}_lr0.001_seed0"
            _write(records, low, _provenance(_fit_record(low, 0.5, True), 1.0))
        for seed, (pk, ar, stale) in enumerate(seeds):
            run = f"{name}_lr0.003_seed{seed}"
            fit = {**_fit_record(run, 0.6, True), "state_bytes": state_bytes, "n_params": n_params,
                   "flops_per_token": flops}
            _write(records, run, _provenance(fit, 60.0 + seed), _provenance(_test_record(pk, ar, stale), 7.5))
    # Flat: never passes the gate, nor its retry.
    for lr in ("0.001", "0.003"):
        run = f"{NON_LEARNER}_lr{lr}_seed0"
        _write(records, run, _provenance(_fit_record(run, 0.35, False), 2.0))
    for seed in (1, 2):
        run = f"{NON_LEARNER}_lr0.001_seed{seed}"
        _write(records, run, _provenance(_fit_record(run, 0.35, False), 2.0))
    run = f"{NON_LEARNER}_lr0.001_seed0_retry"
    _write(records, run, _provenance(_fit_record(run, 0.36, False), 6.0))
    # Pending: one of its two selection fits is done.
    run = f"{PENDING}_lr0.001_seed0"
    _write(records, run, _provenance(_fit_record(run, 0.5, True), 1.0))
    return load_study(path)
