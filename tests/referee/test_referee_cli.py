"""`swar-bench referee`: the quick config end to end in a temporary folder, errors, and `compare`."""

import json
from pathlib import Path

import torch

from swar_bench.cli import main as swar_main
from swar_bench.mechanisms import GRU
from swar_bench.referee.cli import main
from swar_bench.referee.evaluate import evaluate

QUICK = Path(__file__).resolve().parents[2] / "configs" / "referee" / "quick.yaml"
SMALL = [
    "--ranges",
    "[6, 12]",
    "--n_train_steps",
    "2",
    "--n_eval_trials",
    "4",
    "--perplexity_steps",
    "1",
    "--curriculum_rounds",
    "2",
    "--batch_size",
    "4",
    "--mechanism.init_args.d_model",
    "8",
]


def test_quick_config_end_to_end(tmp_path, capsys):
    out = tmp_path / "run"
    assert swar_main(["referee", "--config", str(QUICK), "--out", str(out), *SMALL]) == 0
    printed = capsys.readouterr().out
    assert (
        "needle (acc / proxy / loss)" in printed
        and "range=12" in printed
        and "result.json" in printed
    )
    assert sorted(p.name for p in out.iterdir()) == [
        "forgetting_curve.png",
        "result.json",
    ]  # no temp files left
    assert (out / "forgetting_curve.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    result = json.loads((out / "result.json").read_text())
    # the CLI's result is evaluate() on the config's mechanism built after manual_seed(seed)
    torch.manual_seed(0)
    mech = GRU(vocab_size=17, d_model=8, n_layers=1)
    direct = evaluate(
        mech,
        ranges=[6, 12],
        state_budget_bytes=1024,
        seed=0,
        vocab=17,
        hops=3,
        n_train_steps=2,
        n_eval_trials=4,
        perplexity_steps=1,
        curriculum_rounds=2,
        compute_budget_flops=2.0e11,
        batch_size=4,
        tbptt_steps=64,
        chunk_size=4096,
        lr=0.01,
        grad_clip=1.0,
        resample_prob=0.1,
    )
    assert result == json.loads(json.dumps(direct))
    assert "accuracy" in result["forgetting_curve"][0]


def test_bad_inputs_give_one_line_errors(tmp_path, capsys):
    rc = main(["--config", str(QUICK), "--out", str(tmp_path), "--ranges", "[12, 6]"])
    err = capsys.readouterr().err
    assert rc == 2 and "strictly increasing" in err and len(err.strip().splitlines()) == 1
    rc = main(
        [
            "--config",
            str(QUICK),
            "--out",
            str(tmp_path),
            "--mechanism",
            "swar_bench.mechanisms.NoSuchThing",
        ]
    )
    err = capsys.readouterr().err
    assert (
        rc == 2
        and err.startswith("swar-bench referee: error:")
        and len(err.strip().splitlines()) == 1
    )
    assert not any(tmp_path.iterdir())


def test_compare_saved_results(tmp_path, capsys, gru_result):
    a, b, c = (
        tmp_path / "a" / "result.json",
        tmp_path / "b" / "result.json",
        tmp_path / "c" / "result.json",
    )
    for p in (a, b, c):
        p.parent.mkdir()
    a.write_text(json.dumps(gru_result))
    b.write_text(json.dumps(gru_result))
    other = json.loads(json.dumps(gru_result))
    other["protocol"]["seed"] = 5
    c.write_text(json.dumps(other))
    assert main(["compare", str(a), str(b), "--plot", str(tmp_path / "cmp.png")]) == 0
    out = capsys.readouterr().out
    assert "  a " in out and "  b " in out and (tmp_path / "cmp.png").exists()
    assert main(["compare", str(a), str(c)]) == 2
    err = capsys.readouterr().err
    assert "cannot compare 'a' and 'c': seed=0 vs seed=5" in err
    assert main(["compare", str(tmp_path / "missing.json")]) == 2
    assert "no such file" in capsys.readouterr().err


def test_default_config_is_card_scale_and_its_ledger_pays_one_step_at_1e6():
    from swar_bench.referee.cli import build_parser
    from swar_bench.referee.train import flops, train_step_tokens

    parser = build_parser()
    cfg = parser.parse_args(["--config", str(QUICK.with_name("default.yaml"))])
    assert [int(r) for r in cfg.ranges] == [1000, 10000, 100000, 1000000]
    torch.manual_seed(0)
    mech = parser.instantiate(cfg).mechanism
    share = cfg.compute_budget_flops / len(cfg.ranges)
    step = lambda T: flops(
        mech.n_params,
        **dict(
            zip(
                ("tokens_forward", "tokens_backward"),
                train_step_tokens(cfg.batch_size, T, cfg.tbptt_steps),
            )
        ),
    )
    assert share // step(1_000_001) == 1
    assert share // step(1001) >= cfg.n_train_steps
    assert mech.state_bytes(1) <= cfg.state_budget_bytes
