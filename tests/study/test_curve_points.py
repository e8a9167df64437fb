"""`curve_points` above the steps of a fit was capped silently (a fit validated at every step, fewer
times than asked); it is refused when the study is loaded with its budget, in one line."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from swar_bench.study.cli import main
from swar_bench.study.commands import fit_args, read_budget
from swar_bench.study.spec import StudyError, load_study
from tests.study.test_study_cli import BASE, _study

ONE_RUN = "learning_rates: [1.0e-3]\nextra_learning_rates: {below: [], above: []}\nselection_seeds: 1\nseeds: 1\n"


def test_curve_points_above_the_steps_of_a_fit_is_refused_in_one_line(tmp_path, capsys):
    """The reported input: 20 curve points for a fit of 8 steps."""
    path = _study(tmp_path, ONE_RUN + "curve_points: 20\n")
    for command in ("status", "run", "report"):
        assert main([command, str(path)]) == 2
        assert capsys.readouterr().err == (
            f"swar-bench study {command}: error: {path}: curve_points=20 is more than the 8 steps of a fit of "
            f"{tmp_path / 'base.yaml'}; expected at most 8 (a fit validates at most once per step)\n"
        )
    assert not list(tmp_path.glob("r*/GRU_tiny*")), "nothing ran"


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(steps=st.integers(1, 300), points=st.integers(1, 400), horizon=st.booleans())
def test_curve_points_is_refused_exactly_when_a_fit_could_not_validate_that_often(
    tmp_path_factory, steps, points, horizon
):
    """For any steps (the trainer's, or a smaller schedule horizon ``model.max_steps``) and any
    curve_points: refused (one line naming the value and the most allowed) exactly when it is above
    the steps; otherwise the fit validates at least curve_points times."""
    tmp = tmp_path_factory.mktemp("c")
    trainer_steps = steps * 4 if horizon else steps
    base = BASE.replace("  max_steps: 8\n  check_val", f"  max_steps: {trainer_steps}\n  check_val").replace(
        "  max_steps: 8\n  tbptt", f"  max_steps: {steps}\n  tbptt"
    )
    spec = load_study(_study(tmp, ONE_RUN + f"curve_points: {points}\n", base=base))
    m = spec.mechanisms[0]
    if points > steps:
        try:
            read_budget(spec, m)
        except StudyError as err:
            line = str(err)
        else:
            raise AssertionError(f"curve_points={points} over {steps} steps was accepted")
        assert "\n" not in line and f"curve_points={points} " in line and f"expected at most {steps} " in line
        return
    budget = read_budget(spec, m)
    assert budget.max_steps == steps
    (interval,) = [a.split("=")[1] for a in fit_args(spec, budget, m, 1e-3, 0) if a.startswith("--trainer.val_check")]
    assert steps // int(interval) >= points


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(steps=st.integers(1, 300), retry=st.booleans())
def test_without_curve_points_a_fit_validates_as_it_always_did(tmp_path_factory, steps, retry):
    """No curve_points in the study file: never refused, and the fit's command is the one earlier
    versions wrote (an interval of steps // 10, at least 1), so its records stay reusable."""
    tmp = tmp_path_factory.mktemp("d")
    base = BASE.replace("max_steps: 8", f"max_steps: {steps}")
    spec = load_study(_study(tmp, ONE_RUN, base=base))
    m = spec.mechanisms[0]
    budget = read_budget(spec, m)
    total = steps * (spec.retry_steps_factor if retry else 1)
    assert f"--trainer.val_check_interval={max(1, total // 10)}" in fit_args(spec, budget, m, 1e-3, 0, retry)
