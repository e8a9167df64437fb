"""A mistyped name gets a suggestion whenever it is one typo from a name (issue "faults by whole
kind"): `swar-bench reefree` had none, because ``difflib``'s similarity of a swap inside repeated
letters is 0.43, under the 0.6 cutoff. The kind: any one-character drop, insertion, replacement
or adjacent swap of any name, in a command, an option, a study key or a mechanism name."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from swar_bench.utils.argparsing import closest_option
from swar_bench.utils.text import closest_name, did_you_mean, one_edit_apart

# a typo of a name of 4 characters or more has 3 or more: the one-edit rule's domain (one edit is
# most of a shorter name, where difflib's ratio alone decides)
WORD = st.text("abcdefgh_", min_size=4, max_size=12)


def _typo(name: str, i: int, kind: int, letter: str) -> str:
    i %= len(name)
    return [
        name[:i] + name[i + 1:],                                        # drop
        name[:i] + letter + name[i:],                                   # insert
        name[:i] + letter + name[i + 1:],                               # replace
        name[:i] + name[i + 1:i + 2] + name[i:i + 1] + name[i + 2:],    # swap with the next
    ][kind]


def _osa(a: str, b: str) -> int:
    """Optimal string alignment distance, by the textbook dynamic programme (the oracle)."""
    d = [[0] * (len(b) + 1) for _ in range(len(a) + 1)]
    for i in range(len(a) + 1):
        d[i][0] = i
    for j in range(len(b) + 1):
        d[0][j] = j
    for i in range(1, len(a) + 1):
        for j in range(1, len(b) + 1):
            d[i][j] = min(d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + (a[i - 1] != b[j - 1]))
            if i > 1 and j > 1 and a[i - 1] == b[j - 2] and a[i - 2] == b[j - 1]:
                d[i][j] = min(d[i][j], d[i - 2][j - 2] + 1)
    return d[len(a)][len(b)]


def test_the_reported_swap_is_suggested():
    commands = ["fit", "validate", "test", "predict", "data", "referee", "demo", "check-mechanism", "study"]
    assert closest_name("reefree", commands) == "referee"
    assert did_you_mean("reefree", commands) == " (did you mean referee?)"
    assert closest_option("--max_setps", ["--max_steps", "--max_epochs"]) == "--max_steps"
    assert closest_name("zzzzzz", commands) is None  # far from every name: no suggestion
    assert closest_name("zz", ["za", "fit"]) is None  # two characters: one edit is half the name


@settings(max_examples=300, deadline=None)
@given(a=st.text("abc", max_size=7), b=st.text("abc", max_size=7))
def test_one_edit_apart_is_the_distance_at_most_one(a, b):
    assert one_edit_apart(a, b) == (_osa(a, b) <= 1)


@settings(max_examples=200, deadline=None)
@given(names=st.lists(WORD, min_size=1, max_size=8, unique=True), data=st.data())
def test_any_one_typo_of_a_name_is_suggested(names, data):
    meant = data.draw(st.sampled_from(names))
    typo = _typo(meant, data.draw(st.integers(0, 20)), data.draw(st.integers(0, 3)), data.draw(st.sampled_from("abcdefgh_")))
    suggested = closest_name(typo, names)
    assert suggested is not None and _osa(typo, suggested) <= 1
    if [n for n in names if _osa(typo, n) <= 1] == [meant]:
        assert suggested == meant  # the only name one typo away is the one meant
    by_option = closest_option("--" + typo, ["--" + n for n in names])
    assert by_option is not None and _osa(typo, by_option[2:]) <= 1
