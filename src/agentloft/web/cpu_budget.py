"""CPU-time allowances that stop Python code in the middle of what it is doing, for the render workers.

Some Pygments lexers are super-linear (``autohotkey`` took 8 s on a 4,000-character block) and do their
work in few, long ``re`` calls: a deadline checked between tokens would be overrun by the call in
progress, which took up to 0.8 s at 20,000 characters. CPython's regex engine checks for signals while
it matches, so a profiling timer (``ITIMER_PROF``, CPU time of this process) whose handler raises stops
even such a call within a few milliseconds. CPU time rather than wall time: a block highlights or not
whatever else the machine is doing, so a busy server shows the same page as an idle one.

Signals reach Python code only in the main thread: a ``CpuBudget`` works in a process's main thread (a
render worker's, ``web.render_worker``), and ``spend`` raises ``ValueError`` anywhere else.
"""

from __future__ import annotations

import signal
import time
from collections.abc import Callable
from types import FrameType
from typing import TypeVar

T = TypeVar("T")

# An allowance below this is spent: ``setitimer`` rounds to microseconds, and 0 would mean "no timer".
_SMALLEST = 0.001


class _OutOfTime(BaseException):
    """Raised by the timer's handler. A ``BaseException``, so that no ``except Exception`` in the code
    being timed (latex2mathml has some) swallows it."""


class _Timer:
    """The process's one profiling timer. ``armed`` makes the handler one-shot: it raises at most once
    per arming, and never after ``disarm`` began, so the exception only ever leaves the timed call."""

    armed = False

    @classmethod
    def arm(cls, seconds: float) -> None:
        if signal.getsignal(signal.SIGPROF) is not cls._expired:
            signal.signal(signal.SIGPROF, cls._expired)  # ValueError outside the main thread
        cls.armed = True
        signal.setitimer(signal.ITIMER_PROF, seconds)

    @classmethod
    def disarm(cls) -> None:
        cls.armed = False
        signal.setitimer(signal.ITIMER_PROF, 0)

    @classmethod
    def _expired(cls, _signum: int, _frame: FrameType | None) -> None:
        if cls.armed:
            cls.armed = False
            raise _OutOfTime


class CpuBudget:
    """``total`` CPU seconds for a series of optional pieces of work, at most ``each`` for any one of them.

    ``spend(work)`` runs ``work`` and returns its result, or None when it used up its allowance (it is
    stopped there) or when nothing was left to give; the caller then does without (shows the code
    unhighlighted). Whatever a piece used counts against the total, stopped or not.
    """

    def __init__(self, *, total: float, each: float) -> None:
        self.total = total
        self.each = each
        self.spent = 0.0

    def spend(self, work: Callable[[], T]) -> T | None:
        allowance = min(self.each, self.total - self.spent)
        if allowance < _SMALLEST:
            return None
        started = time.process_time()
        try:
            try:
                _Timer.arm(allowance)
                return work()
            finally:
                _Timer.disarm()
        except _OutOfTime:
            return None
        finally:
            self.spent += time.process_time() - started
