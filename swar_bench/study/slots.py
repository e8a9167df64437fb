"""The study runner's process slots: at most ``n`` runs at once, handed out in the order they were asked for.

A ``threading.Semaphore`` wakes its waiters in no set order, so with ``--jobs 1`` and two selection
fits queued the one that starts first (and, when the budget config is refused, the one whose line
the study quotes) was chance. Here each call of ``StudyRunner._parallel`` takes its tickets in the
order of its list before any of its threads starts, and a ticket waits until every earlier one has
started (or ran nothing: a reused record, a dry run): the runs start in the order of the protocol
(``swar_bench.study.runner``), whatever the scheduler.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager


class Slots:
    """``n`` slots served strictly by ticket: a ticket enters only when a slot is free and every
    earlier ticket has entered or been given up (:meth:`give_up`, for a call that ran nothing).

    Args:
        n: the number of runs at once (``>= 1``).

    Raises:
        ValueError: ``n < 1``.
    """

    def __init__(self, n: int):
        if n < 1:
            raise ValueError(f"slots: n={n!r}; expected an integer >= 1")
        self.free = n
        self.cond = threading.Condition()
        self.issued = 0  # tickets handed out: 0 .. issued - 1
        self.turn = 0  # the smallest ticket neither entered nor given up
        self.done: set[int] = set()  # tickets above ``turn`` that entered or were given up
        self.waiting = 0  # threads waiting in :meth:`hold` (observable by tests)
        self.local = threading.local()

    def ticket(self) -> int:
        """A new ticket: later than every ticket handed out before."""
        with self.cond:
            self.issued += 1
            return self.issued - 1

    def reserve(self, ticket: int) -> None:
        """Make ``ticket`` the one the calling thread's next :meth:`hold` waits with."""
        self.local.ticket = ticket

    def give_up(self) -> None:
        """Give up the calling thread's reserved ticket if no :meth:`hold` used it (the call ran nothing)."""
        ticket = getattr(self.local, "ticket", None)
        self.local.ticket = None
        if ticket is not None:
            with self.cond:
                self._finish(ticket)

    def _finish(self, ticket: int) -> None:
        self.done.add(ticket)
        while self.turn in self.done:
            self.done.discard(self.turn)
            self.turn += 1
        self.cond.notify_all()

    @contextmanager
    def hold(self) -> Iterator[None]:
        """Wait for a free slot and the turn of this thread's ticket (its reserved one, else a
        new one), hold the slot for the ``with`` block."""
        ticket = getattr(self.local, "ticket", None)
        self.local.ticket = None  # a ticket serves one run; the thread's next run takes a new one
        with self.cond:
            if ticket is None:
                ticket = self.issued
                self.issued += 1
            self.waiting += 1
            self.cond.wait_for(lambda: self.free > 0 and self.turn == ticket)
            self.waiting -= 1
            self.free -= 1
            self._finish(ticket)  # the next ticket may take another free slot
        try:
            yield
        finally:
            with self.cond:
                self.free += 1
                self.cond.notify_all()
