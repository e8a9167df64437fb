"""The study runner's slots (``swar_bench.study.slots``): runs start in ticket order, never more than n at once.

The reported fault: with ``--jobs 1`` and a refused budget config, the study quoted the refusal of
``GRU_tiny_lr0.003_seed0`` on one run and of ``GRU_tiny_lr0.001_seed0`` on another, because a
``threading.Semaphore`` woke the two queued selection fits in no set order."""

from __future__ import annotations

import threading
import time

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from swar_bench.study.slots import Slots


def _wait_until(predicate, what: str, timeout: float = 60.0) -> None:
    """Poll ``predicate`` (an observable event) until it holds; fail naming ``what`` after ``timeout`` s."""
    end = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > end:
            pytest.fail(f"timed out waiting for {what}")
        time.sleep(0.001)


@settings(max_examples=30, deadline=None)
@given(order=st.permutations(range(6)).flatmap(lambda p: st.integers(1, 6).map(lambda k: [i for i in p if i < k])))
def test_one_slot_goes_to_the_tickets_in_order_whatever_order_the_threads_start(order):
    """Threads that start (and ask) in any order enter in the order of their tickets."""
    slots = Slots(1)
    gate = slots.hold()
    gate.__enter__()  # the slot is busy until every thread waits
    tickets = [slots.ticket() for _ in order]  # taken in the list's order, as StudyRunner._parallel does
    entered: list[int] = []

    def run(i: int) -> None:
        slots.reserve(tickets[i])
        with slots.hold():
            entered.append(i)

    threads = [threading.Thread(target=run, args=(i,)) for i in order]  # started in the permuted order
    for t in threads:
        t.start()
    _wait_until(lambda: slots.waiting == len(order), "every thread to wait for the slot")
    gate.__exit__(None, None, None)
    for t in threads:
        t.join(60)
    assert entered == sorted(order)


@settings(max_examples=15, deadline=None)
@given(n=st.integers(1, 3), k=st.integers(1, 7))
def test_never_more_than_n_hold_a_slot_and_every_run_gets_one(n, k):
    slots = Slots(n)
    inside, most, done = [0], [0], []
    lock = threading.Lock()
    release = threading.Event()

    def run(i: int) -> None:
        with slots.hold():
            with lock:
                inside[0] += 1
                most[0] = max(most[0], inside[0])
            release.wait(60)
            with lock:
                inside[0] -= 1
                done.append(i)

    threads = [threading.Thread(target=run, args=(i,)) for i in range(k)]
    for t in threads:
        t.start()
    _wait_until(lambda: inside[0] == min(n, k) and slots.waiting == k - min(n, k),
                "the first n runs to hold their slots and the rest to wait")
    release.set()
    for t in threads:
        t.join(60)
    assert most[0] == min(n, k)
    assert sorted(done) == list(range(k))


def test_zero_slots_is_refused_in_one_line():
    with pytest.raises(ValueError, match=r"^slots: n=0; expected an integer >= 1$"):
        Slots(0)


def _second_waiting(slots: Slots, entered: list[str]) -> tuple[int, threading.Thread]:
    """Take two tickets; a thread holding the second asks for the slot and is seen waiting.
    Returns the first ticket and that thread."""
    first, second = slots.ticket(), slots.ticket()

    def later() -> None:
        slots.reserve(second)
        with slots.hold():
            entered.append("second")

    t = threading.Thread(target=later)
    t.start()
    _wait_until(lambda: slots.waiting == 1, "the second ticket to wait")
    return first, t


def test_a_later_ticket_waits_for_an_earlier_one_that_has_not_asked_yet():
    """The race behind the reported fault: the second selection fit's thread reached the slot
    before the first's; it must wait, although the slot is free, until the first has started."""
    slots, entered = Slots(1), []
    first, t = _second_waiting(slots, entered)
    assert entered == [] and slots.free == 1  # the slot is free, and still the second waits
    slots.reserve(first)
    with slots.hold():
        entered.append("first")
    t.join(60)
    assert entered == ["first", "second"]


def test_a_ticket_given_up_lets_the_next_one_go():
    """A call that started no process (a reused record, a dry run) gives its turn up."""
    slots, entered = Slots(1), []
    first, t = _second_waiting(slots, entered)
    slots.reserve(first)
    slots.give_up()
    t.join(60)
    assert entered == ["second"] and slots.turn == 2
    slots.give_up()  # nothing reserved: a no-op
    assert slots.turn == 2
