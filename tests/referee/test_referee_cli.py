"""`swar-bench referee`: the quick config end to end in a temporary folder, errors, and `compare`."""

import functools
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from swar_bench.cli import main as swar_main
from swar_bench.mechanisms import GRU
from swar_bench.referee.cli import main
from swar_bench.referee.evaluate import evaluate
from swar_bench.utils import interrupts

from .conftest import small_gru

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
    torch.set_num_threads(2)  # quick.yaml sets threads: 1
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
    assert torch.get_num_threads() == 1


@pytest.fixture
def no_evaluate(monkeypatch):
    """Make the CLI's evaluate fail loudly: an error found after it ran would show up as this."""

    @functools.wraps(evaluate)  # the parser reads evaluate's signature
    def fail(*args, **kwargs):
        raise AssertionError("evaluate ran before the bad --out was reported")

    monkeypatch.setattr("swar_bench.referee.cli.evaluate", fail)


def test_bad_out_is_reported_before_any_work(tmp_path, capsys, no_evaluate):
    afile = tmp_path / "afile"
    afile.write_text("not a folder")
    for out, expected in [
        (afile / "x", f"cannot be created: {str(afile)!r} is not a folder"),
        (afile / "x" / "y", f"cannot be created: {str(afile)!r} is not a folder"),
        (afile, "exists and is not a folder"),
    ]:
        rc = main(["--config", str(QUICK), "--out", str(out), *SMALL])
        err = capsys.readouterr().err
        assert rc == 2, err
        assert err.startswith(f"swar-bench referee: error: --out={str(out)!r} ")
        assert expected in err and len(err.strip().splitlines()) == 1
    if os.geteuid() != 0:  # root may write anywhere
        locked = tmp_path / "locked"
        locked.mkdir(mode=0o500)
        try:
            rc = main(["--config", str(QUICK), "--out", str(locked / "run"), *SMALL])
            err = capsys.readouterr().err
            assert rc == 2 and f"{str(locked)!r} is not writable" in err
        finally:
            locked.chmod(0o700)
    assert afile.read_text() == "not a folder" and sorted(p.name for p in tmp_path.iterdir()) == [
        "afile",
        *(["locked"] if os.geteuid() != 0 else []),
    ]


def test_prepare_out_dir_creates_the_folder_and_leaves_no_probe_behind(tmp_path):
    from swar_bench.referee.cli import prepare_out_dir, remove_created

    assert prepare_out_dir(str(tmp_path)) == []  # existing: nothing created
    assert list(tmp_path.iterdir()) == []  # the probe files are gone
    new = tmp_path / "new" / "deeper"
    assert prepare_out_dir(str(new)) == [tmp_path / "new", new]
    assert new.is_dir() and list(new.iterdir()) == []
    (tmp_path / "new" / "kept.txt").write_text("x")
    remove_created([tmp_path / "new", new])  # takes back only what is still empty
    assert not new.exists() and (tmp_path / "new" / "kept.txt").read_text() == "x"


@pytest.mark.skipif(not os.path.isdir("/proc/self"), reason="needs Linux /proc")
def test_unwritable_out_is_found_by_writing_not_by_permission_bits(tmp_path, capsys, no_evaluate):
    # /proc passes os.access for root but takes no new folder or file: only a real write tells
    long_name = str(tmp_path / ("a" * 300))
    (tmp_path / "has_dir" / "result.json").mkdir(parents=True)
    for out, expected in [
        ("/proc/ref", "cannot be created: No such file or directory;"),
        ("/proc", "cannot be written: creating 'result.json' in '/proc' failed (No such file"),
        (long_name, "cannot be created: File name too long;"),
        (str(tmp_path / "new" / ("a" * 300)), "cannot be created: File name too long;"),
        (str(tmp_path / "has_dir"), "holds a folder named 'result.json' where that file goes;"),
    ]:
        rc = main(["--config", str(QUICK), "--out", out, *SMALL])
        err = capsys.readouterr().err
        assert rc == 2, err
        assert err.startswith(f"swar-bench referee: error: --out={out!r} ")  # named in full
        assert expected in err and len(err.strip().splitlines()) == 1
        assert err.rstrip().endswith("expected a folder (new or existing) this user can write to")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["has_dir"]  # "new" was taken back


def test_out_created_for_a_rejected_run_is_removed(tmp_path, capsys):
    out = tmp_path / "a" / "b"
    for bad in (
        ["--threads", "0"],
        ["--ranges", "[12, 6]"],  # found inside evaluate, after the check
        ["--mechanism.init_args.d_model", "-3"],  # the mechanism cannot be built
    ):
        rc = main(["--config", str(QUICK), "--out", str(out), *bad])
        err = capsys.readouterr().err
        assert rc == 2 and len(err.strip().splitlines()) == 1, err
        assert list(tmp_path.iterdir()) == []
    (tmp_path / "a").mkdir()  # a folder that was there before the run is kept
    assert main(["--config", str(QUICK), "--out", str(out), "--threads", "0"]) == 2
    assert [p.name for p in tmp_path.iterdir()] == ["a"] and not out.exists()


@pytest.mark.parametrize(
    "text, expected",
    [
        ("", "is empty (no options in it); expected a YAML mapping of referee options"),
        ("\n# only a comment\n", "is empty (no options in it); expected a YAML mapping"),
        ("- 1\n- 2\n", "holds a YAML list, not a mapping; expected a YAML mapping"),
        ("a: [1\n", "is not valid YAML ("),
    ],
)
def test_empty_or_non_mapping_config_names_the_file(tmp_path, capsys, text, expected):
    cfg = tmp_path / "c.yaml"
    cfg.write_text(text)
    for argv in (["--config", str(cfg)], [f"--config={cfg}"]):
        assert main(argv) == 2
        err = capsys.readouterr().err
        assert err.startswith(f"swar-bench referee: error: --config={str(cfg)!r} "), err
        assert expected in err and len(err.strip().splitlines()) == 1


def test_ranges_and_threads_errors_echo_the_value_as_given(tmp_path, capsys):
    rc = main(["--config", str(QUICK), "--out", str(tmp_path), "--threads", "0"])
    err = capsys.readouterr().err
    assert rc == 2 and "--threads=0: expected a number of CPU threads >= 1" in err
    # ranges are parsed as floats; the error shows -8 as typed, not -8.0
    rc = main(["--config", str(QUICK), "--out", str(tmp_path), "--ranges", "[-8,16]"])
    err = capsys.readouterr().err
    assert rc == 2
    assert err == "swar-bench referee: error: --ranges=[-8,16]: ranges[0]=-8: expected an integer >= 6\n"
    assert not any(tmp_path.iterdir())


def test_default_threads_honours_omp_num_threads(monkeypatch):
    from swar_bench.referee.cli import default_threads

    monkeypatch.setenv("OMP_NUM_THREADS", "3")
    assert default_threads() == 3
    monkeypatch.delenv("OMP_NUM_THREADS")
    assert default_threads() == max(1, min(4, len(os.sched_getaffinity(0))))


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


@pytest.mark.parametrize(
    ("argv", "line"),
    [
        (["--seeed", "1"], "swar-bench referee: error: unknown option --seeed (did you mean --seed?)"),
        (
            ["--config", str(QUICK), "--seeed=1", "--xyzzy", "3"],
            ("swar-bench referee: error: unknown options --seeed (did you mean --seed?), --xyzzy; "
             "expected options of swar-bench referee (swar-bench referee --help)"),
        ),
        (["--config", str(QUICK), "stray"], "swar-bench referee: error: unexpected argument 'stray' (swar-bench referee --help)"),
    ],
)
def test_a_misspelt_option_gets_its_closest_option(capsys, argv, line):
    """The reported ``referee --seeed 1`` (jsonargparse: "unrecognized arguments: --seeed 1"),
    before any work: one line with the option it is closest to."""
    assert main(argv) == 2
    assert capsys.readouterr().err == line + "\n"


@settings(max_examples=60, deadline=None)
@given(data=st.data(), names=st.lists(st.text("abcdefghijklmnopqrstuvwxyz_", min_size=4, max_size=14), min_size=1,
                                      max_size=8, unique=True), inline=st.booleans())
def test_unrecognized_arguments_name_each_unknown_option_with_its_closest(data, names, inline):
    """The kind: any option list, any option misspelt by one swap, drop or doubling, in argparse's
    and jsonargparse's "unrecognized arguments" message: one line naming the typo as typed (no
    ``=value``) and suggesting an option of the list that is one edit from it."""
    from swar_bench.utils.argparsing import unrecognized_line
    from swar_bench.utils.text import one_edit_apart

    name = data.draw(st.sampled_from(names))
    i = data.draw(st.integers(0, len(name) - 2))
    typo = data.draw(st.sampled_from([name[:i] + name[i + 1] + name[i] + name[i + 2:], name[:i] + name[i + 1:],
                                      name[:i] + name[i] + name[i:]]))
    if typo in names:
        return  # the typo is another option
    words = [f"--{typo}=1"] if inline else [f"--{typo}", "1"]
    line = unrecognized_line(f"unrecognized arguments: {' '.join(words)}", [f"--{n}" for n in names] + ["-h"], "tool")
    assert line is not None and "\n" not in line
    assert line.startswith(f"unknown option --{typo} (did you mean --")
    suggested = line.split("(did you mean --")[1].split("?)")[0]
    assert suggested in names and one_edit_apart(typo, suggested)
    assert unrecognized_line("Parser key \"x\": nope", names, "tool") is None


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
    # the suffix names the format, in any case
    for name, magic in (("cmp.png", b"\x89PNG"), ("cmp.PDF", b"%PDF"), ("cmp.svg", b"<?xml")):
        assert main(["compare", str(a), str(b), "--plot", str(tmp_path / name)]) == 0, name
        assert (tmp_path / name).read_bytes().startswith(magic), name
    capsys.readouterr()
    assert main(["compare", str(a), str(c)]) == 2
    err = capsys.readouterr().err
    assert "cannot compare 'a' and 'c': seed=0 vs seed=5" in err
    assert main(["compare", str(tmp_path / "missing.json")]) == 2
    assert "no such file" in capsys.readouterr().err
    assert main(["compare", str(tmp_path / "a")]) == 2
    assert "a: cannot be read (Is a directory)" in capsys.readouterr().err
    # training FLOPs 3x apart: refused at the default 5%, shown with --flops-tolerance inf
    spent = json.loads(json.dumps(gru_result))
    for cells in spent["suites"].values():
        for cell in cells:
            cell["flops"]["train"] *= 3
    d = tmp_path / "d" / "result.json"
    d.parent.mkdir()
    d.write_text(json.dumps(spent))
    assert main(["compare", str(a), str(d)]) == 2
    assert "66.7% apart, more than the tolerance 5.0%" in capsys.readouterr().err
    assert main(["compare", str(a), str(d), "--flops-tolerance", "inf"]) == 0
    assert "  d " in capsys.readouterr().out
    assert main(["compare", str(a), str(d), "--flops-tolerance", "x"]) == 2
    assert "--flops-tolerance=x: expected a relative difference >= 0" in capsys.readouterr().err


def test_compare_bad_plot_is_one_line_error_before_any_work(tmp_path, capsys):
    afile = tmp_path / "x.txt"
    afile.write_text("not a folder")
    missing = str(tmp_path / "missing.json")  # never read: the --plot check comes first
    expected = "expected a .png, .pdf or .svg file path (new or existing file) in a folder this user can write to"
    for plot, why in [
        (afile / "p.png", f"cannot be created: {str(afile)!r} is not a folder;"),
        (afile / "d" / "p.png", f"cannot be created: {str(afile)!r} is not a folder;"),
        (tmp_path, "is a folder;"),
        (f"{tmp_path}/new/", "is a folder;"),
        ("", "is empty;"),
        (tmp_path / ("a" * 300 + ".png"), "cannot be written: creating a file in"),
    ]:
        rc = main(["compare", missing, "--plot", str(plot)])
        err = capsys.readouterr().err
        assert rc == 2, err
        assert err.startswith(f"swar-bench referee compare: error: --plot={str(plot)!r} {why}"), err
        assert err.rstrip().endswith(expected) and len(err.strip().splitlines()) == 1
    # the reported `--plot x.txt`, which wrote a PNG under that name: the suffix names the format
    for plot, why in [(tmp_path / "x2.txt", "its suffix '.txt' is not a figure format"),
                      (tmp_path / "curve", "it has no suffix")]:
        assert main(["compare", missing, "--plot", str(plot)]) == 2
        assert capsys.readouterr().err == (f"swar-bench referee compare: error: --plot={str(plot)!r}: {why}; "
                                           "expected a file ending .png, .pdf or .svg\n")
        assert not plot.exists()
    # a folder made for the plot of a compare that then fails is taken back
    rc = main(["compare", missing, "--plot", str(tmp_path / "n1" / "n2" / "c.png")])
    assert rc == 2 and "no such file" in capsys.readouterr().err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["x.txt"]
    assert afile.read_text() == "not a folder"


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


def test_importing_the_referee_before_torch_makes_openmp_waiters_sleep():
    import subprocess
    import sys

    code = "import os, swar_bench.referee; print(os.environ.get('OMP_WAIT_POLICY'))"
    env = {k: v for k, v in os.environ.items() if k != "OMP_WAIT_POLICY"}
    out = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True
    )
    assert out.stdout.strip() == "PASSIVE"


def test_compare_names_a_result_file_missing_a_field(tmp_path, capsys, gru_result):
    good = tmp_path / "a" / "result.json"
    good.parent.mkdir()
    good.write_text(json.dumps(gru_result))
    no_suites = json.loads(json.dumps(gru_result))
    no_suites["suites"] = {}
    protocol_str = dict(json.loads(json.dumps(gru_result)), protocol="x")
    for bad, problem in [
        (no_suites, "suites.needle is missing"),
        (protocol_str, "protocol is 'x' (str), not a mapping"),
    ]:
        path = tmp_path / "b.json"
        path.write_text(json.dumps(bad))
        assert main(["compare", str(good), str(path), "--names", "a", "b"]) == 2
        captured = capsys.readouterr()
        assert captured.out == ""
        assert captured.err == (
            f"swar-bench referee compare: error: {path}: {problem}; "
            "expected an evaluate() result (schema 'swar_bench.referee/2')\n"
        )


def _stop_inside_evaluate(monkeypatch, stop):
    """Make the CLI's evaluate call ``stop()`` (a signal or an exception), as a run stopped mid-way."""

    @functools.wraps(evaluate)  # the parser reads evaluate's signature
    def stopped(*args, **kwargs):
        stop()
        time.sleep(5)  # the signal handler runs before this returns
        raise AssertionError("the run was not stopped")

    monkeypatch.setattr("swar_bench.referee.cli.evaluate", stopped)


def _raise_keyboard_interrupt():
    raise KeyboardInterrupt


@pytest.mark.parametrize(
    "stop, rc, line",
    [
        (_raise_keyboard_interrupt, 130, "swar-bench referee: interrupted\n"),
        (
            lambda: os.kill(os.getpid(), signal.SIGTERM),
            143,
            "swar-bench referee: terminated (SIGTERM)\n",
        ),
    ],
)
def test_stopped_run_prints_one_line_and_removes_its_empty_out(
    tmp_path, capsys, monkeypatch, stop, rc, line
):
    _stop_inside_evaluate(monkeypatch, stop)
    before = signal.getsignal(signal.SIGTERM)
    out = tmp_path / "x" / "refint"
    assert main(["--config", str(QUICK), "--out", str(out), *SMALL]) == rc
    assert capsys.readouterr().err.endswith(line)  # after the mechanism's log lines, if any
    assert list(tmp_path.iterdir()) == []  # both folders it created are gone
    assert signal.getsignal(signal.SIGTERM) is before  # the previous handler is back


def test_sigterm_while_writing_leaves_no_half_written_file(tmp_path, capsys, monkeypatch, gru_result):
    from swar_bench.utils import files as io

    armed = []

    @functools.wraps(evaluate)
    def finished(*args, **kwargs):
        armed.append(True)  # the --out check is done: the next atomic write is the real one
        return gru_result

    real_mode = io.new_file_mode

    def umask_then_sigterm():  # called inside the atomic write, after the temp file is written
        if armed:
            os.kill(os.getpid(), signal.SIGTERM)
        return real_mode()

    monkeypatch.setattr("swar_bench.referee.cli.evaluate", finished)
    monkeypatch.setattr(io, "new_file_mode", umask_then_sigterm)
    out = tmp_path / "run"
    assert main(["--config", str(QUICK), "--out", str(out), *SMALL]) == 143
    assert capsys.readouterr().err.endswith("swar-bench referee: terminated (SIGTERM)\n")
    assert list(tmp_path.iterdir()) == []  # no temp file, no result.json, no empty folder
    kept = tmp_path / "kept"
    kept.mkdir()  # a folder that was there before is kept, still empty
    armed.clear()
    assert main(["--config", str(QUICK), "--out", str(kept), *SMALL]) == 143
    assert kept.is_dir() and list(kept.iterdir()) == []


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_signal_from_outside_ends_the_command_with_one_line(tmp_path, signum):
    # the real command in its own process, stopped as by Ctrl-C or `timeout -s TERM`
    out = tmp_path / "x" / "refint"
    # run as the `swar-bench` script runs (not `python -m`: under `-m`, CPython 3.11 ends a process
    # that caught a KeyboardInterrupt raised inside an eval(), as jsonargparse's type hints are,
    # by SIGINT itself rather than with the status it returned; a shell shows 130 either way)
    main_code = "import sys; from swar_bench.cli import main; sys.exit(main())"
    cmd = [sys.executable, "-c", main_code, "referee", "--config", str(QUICK)]
    cmd += ["--out", str(out), "--n_train_steps", "100000"]  # runs until stopped
    proc = subprocess.Popen(
        cmd,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        # a child of a non-interactive shell may start with SIGINT ignored: start it as a terminal would
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),  # noqa: PLW1509 - pytest starts no threads
    )
    try:
        deadline = time.monotonic() + 300  # a bound on a hang (imports take long on a loaded machine)
        while not out.is_dir() and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)  # the event: the run checked and created --out (its handlers are installed)
        assert out.is_dir(), proc.communicate(timeout=300)
        proc.send_signal(signum)
        stdout, stderr = proc.communicate(timeout=300)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 128 + signum, stderr
    name = "interrupted" if signum == signal.SIGINT else "terminated (SIGTERM)"
    assert stderr.splitlines()[-1] == f"swar-bench referee: {name}"
    assert "Traceback" not in stderr and stdout == ""
    assert list(tmp_path.iterdir()) == []


def test_main_from_another_thread_leaves_signals_alone(tmp_path, capsys):
    import threading

    before = signal.getsignal(signal.SIGTERM)
    rcs = []
    worker = threading.Thread(
        target=lambda: rcs.append(main(["compare", str(tmp_path / "missing.json")]))
    )
    worker.start()
    worker.join()
    assert rcs == [2]  # signal.signal would raise ValueError here: no handler is installed
    assert "missing.json: no such file" in capsys.readouterr().err
    assert signal.getsignal(signal.SIGTERM) is before


def test_a_later_mechanism_warns_about_the_init_args_it_drops(capsys):
    code = main(["--mechanism=LSTM", "--mechanism.init_args.d_model=8", "--mechanism=GRU", "--print_config"])
    captured = capsys.readouterr()
    assert code == 0
    assert captured.err.splitlines() == [
        ("swar-bench referee: warning: --mechanism=GRU replaces --mechanism.init_args.d_model=8 given before it (the new "
        "mechanism starts from its class's defaults); give init args after --mechanism to keep them")
    ]
    assert "d_model: 64" in captured.out  # GRU's default: the warning tells the truth


def _stop_after(monkeypatch, module, name, under, k, signum):
    """Make the ``k``-th call (0-based) of ``module.name`` on a path under ``under`` send ``signum``
    to this process just after the real call returned: the moment a folder or temporary file
    exists but its caller has not yet recorded it."""
    real = getattr(module, name)
    seen = []

    def stopping(*args, **kwargs):
        result = real(*args, **kwargs)
        where = kwargs.get("dir", args[0] if args else "")
        if str(where).startswith(str(under)):
            seen.append(where)
            if len(seen) == k + 1:
                signal.raise_signal(signum)  # in this thread: its handler runs before this returns
        return result

    monkeypatch.setattr(module, name, stopping)
    return seen


def _stop_command(tmp_path: Path, command: str, depth: int) -> tuple[list[str], Path]:
    """argv of a referee command whose output lies ``depth`` new folders deep, and that top folder."""
    top = tmp_path / "new"
    folder = top.joinpath(*[f"d{i}" for i in range(1, depth)])
    inputs = tmp_path / "in"
    inputs.mkdir(exist_ok=True)
    a, b = inputs / "a.json", inputs / "b.json"
    a.write_text("{}")
    b.write_text("{}")
    if command == "run":
        return ["--config", str(QUICK), "--out", str(folder), *SMALL], top
    if command == "compare":
        return ["compare", str(a), str(b), "--names", "a", "b", "--plot", str(folder / "c.png")], top
    return ["verdict", "--baseline", str(a), "--challenger", str(b), "--json", str(folder / "v.json")], top


def test_the_reported_stop_just_after_out_was_made_leaves_no_folder(tmp_path, monkeypatch, capsys, small_kwargs):
    # reported (SIGTERM as soon as --out=x/refint existed): 143, but the new folder x was left behind,
    # because the stop fell between mkdir(x/refint) and the record of it
    argv, top = _stop_command(tmp_path, "run", 2)
    _stop_after(monkeypatch, os, "mkdir", tmp_path / "new", 1, signal.SIGTERM)
    assert main(argv) == 143
    assert capsys.readouterr().err.splitlines()[-1] == "swar-bench referee: terminated (SIGTERM)"
    assert not top.exists()
    # reported: the stop outlived its command, and the next evaluate() in this process raised
    # Terminated at its first chunk; it ends with the command that reported it
    assert interrupts.stopped() is None
    result = evaluate(small_gru(0), **{**small_kwargs, "ranges": (6,), "curriculum_rounds": 0})
    assert [row["range"] for row in result["suites"]["needle"]] == [6]


@settings(max_examples=24, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    st.sampled_from(["run", "compare", "verdict"]),
    st.integers(1, 3),
    st.sampled_from(["mkdir", "temp file"]),
    st.integers(0, 2),
    st.sampled_from([signal.SIGINT, signal.SIGTERM]),
)
def test_a_stop_just_after_any_output_folder_or_probe_file_was_made_leaves_nothing(
    tmp_path_factory, monkeypatch, capsys, command, depth, made, k, signum
):
    tmp_path = tmp_path_factory.mktemp("stop")
    argv, top = _stop_command(tmp_path, command, depth)
    with monkeypatch.context() as patch:
        if made == "mkdir":
            seen = _stop_after(patch, os, "mkdir", top, min(k, depth - 1), signum)
        else:  # the rehearsal of the atomic write makes two temporary files in the output folder
            seen = _stop_after(patch, tempfile, "mkstemp", top, min(k, 1), signum)
        assert main(argv) == 128 + signum
    assert seen, "the stop was never sent"
    name = "interrupted" if signum == signal.SIGINT else "terminated (SIGTERM)"
    assert capsys.readouterr().err.splitlines()[-1] == f"swar-bench referee: {name}"
    assert not top.exists()
    assert interrupts.stopped() is None  # the stop ended with its command: it cannot stop the next one
    interrupts.raise_if_stopped()


@settings(max_examples=60, deadline=None)
@given(stem=st.text(st.characters(codec="ascii", exclude_characters="/\x00."), min_size=1, max_size=8),
       suffix=st.one_of(st.sampled_from([".png", ".PNG", ".pdf", ".Svg", ".txt", ".jpg", ".png.txt", ""]),
                        st.text(st.characters(codec="ascii", exclude_characters="/\x00"), max_size=5)))
def test_a_figure_path_names_its_format_or_is_refused_in_one_line(stem, suffix):
    # The kind behind "`compare --plot x.txt` writes a PNG under that name": the format follows the
    # suffix (case-insensitive) when matplotlib writes it as one of PLOT_FORMATS; anything else is
    # refused before any drawing, in one line naming the value.
    from swar_bench.referee.report import PLOT_FORMATS, plot_format

    path = stem + suffix
    want = Path(path).suffix.lower().lstrip(".")
    if want in PLOT_FORMATS:
        assert plot_format(path) == want
    else:
        with pytest.raises(ValueError) as err:
            plot_format(path, shown=f"--plot={path!r}")
        assert str(err.value).startswith(f"--plot={path!r}: ") and "\n" not in str(err.value)


@pytest.mark.parametrize(
    "option, value, expected",
    [
        ("--seed", "-1", "--seed=-1: expected an integer in [0, 18446744073709551615]"),
        ("--seed", str(2**64), f"--seed={2**64}: expected an integer in [0, 18446744073709551615]"),
        (
            "--init_seed",
            str(-(2**63) - 1),
            f"--init_seed={-(2**63) - 1}: expected an integer in [-9223372036854775808, 18446744073709551615]",
        ),
    ],
)
def test_a_seed_torch_cannot_take_is_one_line_before_any_work(tmp_path, capsys, no_evaluate, option, value, expected):
    out = tmp_path / "run"
    rc = main(["--config", str(QUICK), "--out", str(out), *SMALL, option, value])
    assert (rc, capsys.readouterr().err) == (2, f"swar-bench referee: error: {expected}\n")
    assert list(tmp_path.iterdir()) == []  # the --out made for the run is taken back


@settings(max_examples=25, deadline=None)
@given(st.one_of(st.integers(max_value=-1), st.integers(min_value=2**64), st.integers(0, 2**64 - 1)))
def test_check_seed_takes_exactly_what_every_seeded_part_takes(seed):
    """A seed check_seed accepts seeds torch, numpy and the bandit alike; any other is one line."""
    import numpy as np

    from swar_bench.referee.bandit import ThompsonBernoulli
    from swar_bench.referee.evaluate import MAX_SEED, check_seed

    if 0 <= seed <= MAX_SEED:
        assert check_seed(seed) == seed
        torch.Generator().manual_seed(seed)
        np.random.default_rng([seed, 7])
        ThompsonBernoulli(2, seed=seed)
    else:
        with pytest.raises(ValueError, match=r"^seed=-?\d+: expected an integer in \[0, 18446744073709551615\]$"):
            check_seed(seed)


def test_the_reported_out_dashes_is_one_line(capsys, no_evaluate):
    assert main(["--config", str(QUICK), "--out=--"]) == 2
    assert capsys.readouterr().err == "swar-bench referee: error: argument --out: expected one value; got '--'\n"
