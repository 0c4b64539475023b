"""Sign-in throttling: the rules (``LoginThrottle``) over a store of counters (``CounterStore``).

Two limits, both counted before the password is checked, so that a burst of parallel attempts cannot
all pass a check that reads a count before it is written (20 parallel wrong passwords once got 17
checks against a limit of 5):

- **per account, from any address, with a growing wait.** ``free`` attempts go through at once; after
  that the account waits ``first_wait`` seconds, then twice as long after each further attempt (1 s,
  2 s, 4 s, … up to ``longest_wait``). An attacker's five wrong passwords therefore hold the real user up
  for a second, not for minutes, while a long guessing run slows to about ``free + tiers`` guesses per
  ``longest_wait``. A successful sign-in starts the account over.
- **per address, across all accounts**: ``attempts`` per ``window`` (successful ones count too: a
  sign-in that succeeds cannot be told from one that fails until the password has been checked, and
  counting it afterwards would reopen the race). IPv6 addresses count per /64, the block one client
  usually holds.

Why tiers of plain counters: the growing wait is a ladder of fixed windows, tier ``k`` allowing
``free + k`` attempts per ``first_wait · 2^k`` seconds. Each tier is a counter that only goes up within
a window that is never extended — the one operation a shared store does atomically (Redis ``INCR`` plus
an ``EXPIRE`` set when the key is created) — so the rules live here once and any store can keep the
counts. An attempt is counted in each limit in turn and stops at the first one it exceeds, so a refused
attempt is counted only up to the tier that refused it (whose window does not move): hammering during a
wait never reaches the longer tiers.

An attempt whose password nobody could check (the only directory that might know the person could not be
reached) is given back to the account's tiers afterwards (``not_checked``): a directory outage is not the
person's wrong password and must not lock them out once it is over. Giving back only lowers counts
that were raised before the check, so the race the counting-first order closes stays closed; the
address keeps its count, as for a successful sign-in.

The stores: ``MemoryCounters`` in the one process of the embedded default; ``RedisCounters``
(``auth.throttle_redis``, a module of its own so that a process without Redis never imports the client
library) when several workers share a Redis (``AGENTLOFT_REDIS_URL``), so an attempt counts the same on
every worker.

The address a request comes from is the socket's, or, behind a reverse proxy named in
``AGENTLOFT_FORWARDED_ALLOW_IPS``, the one that proxy puts in ``X-Forwarded-For`` (``agentloft serve``
passes the setting to uvicorn; nothing else is trusted).
"""

from __future__ import annotations

import ipaddress
import math
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from itertools import islice
from typing import Protocol

from agentloft.core.settings import Settings


@dataclass(frozen=True)
class Count:
    """A counter just after a hit: hits in its current window, this one included, and the seconds until
    the window ends (the counter then starts again from zero)."""

    value: int
    resets_in: float


class CounterStore(Protocol):
    """Where the counts live. ``hit`` must be atomic: concurrent hits on one key get distinct values."""

    async def hit(self, key: str, window: float) -> Count:
        """Add one to ``key``. A key that does not exist (or whose window has ended) starts at one with a
        window of ``window`` seconds from now; later hits never extend it."""
        ...

    async def clear(self, *keys: str) -> None:
        """Forget ``keys`` (missing keys are fine)."""
        ...

    async def give_back(self, *keys: str) -> None:
        """Take one off each of ``keys`` that is above zero in its current window (others stay as they are)."""
        ...


class MemoryCounters:
    """The counters of one process, for the single-process default.

    Atomic under asyncio: ``hit`` never awaits, so no other coroutine runs between reading a count and
    writing it. At most ``max_keys`` counters are kept; when full, ended windows are dropped first, then
    the oldest tenth (an attacker who floods the table with fresh keys gains little beyond what the
    per-address limit already allows him)."""

    def __init__(self, *, clock: Callable[[], float] = time.monotonic, max_keys: int = 200_000) -> None:
        self._clock = clock
        self._max_keys = max_keys
        self._counts: dict[str, tuple[int, float]] = {}  # key -> (hits, when the window ends)

    async def hit(self, key: str, window: float) -> Count:
        now = self._clock()
        value, ends = self._counts.get(key, (0, now))
        if ends <= now:
            value, ends = 0, now + window
            if key not in self._counts and len(self._counts) >= self._max_keys:
                self._make_room(now)
        self._counts[key] = (value + 1, ends)
        return Count(value + 1, ends - now)

    async def clear(self, *keys: str) -> None:
        for key in keys:
            self._counts.pop(key, None)

    async def give_back(self, *keys: str) -> None:
        now = self._clock()
        for key in keys:
            value, ends = self._counts.get(key, (0, now))
            if value > 0 and ends > now:
                self._counts[key] = (value - 1, ends)

    def __len__(self) -> int:
        return len(self._counts)

    def _make_room(self, now: float) -> None:
        self._counts = {k: v for k, v in self._counts.items() if v[1] > now}
        if len(self._counts) >= self._max_keys:
            for key in list(islice(self._counts, max(1, self._max_keys // 10))):
                del self._counts[key]


@dataclass(frozen=True)
class Limit:
    """At most ``attempts`` per ``window`` seconds."""

    attempts: int
    window: float


@dataclass(frozen=True)
class Decision:
    """Whether an attempt may be checked; if not, the whole seconds after which to try again (the
    limit that refused it has reset by then; another may still apply)."""

    allowed: bool
    retry_after: int = 0


def account_limits(*, free: int, first_wait: float, longest_wait: float) -> tuple[Limit, ...]:
    """The tiers of the per-account growing wait: tier ``k`` allows ``free + k`` attempts per
    ``first_wait · 2^k`` seconds, the last tier's window being ``longest_wait``."""
    limits: list[Limit] = []
    while True:
        window = min(first_wait * 2 ** len(limits), longest_wait)
        limits.append(Limit(free + len(limits), window))
        if window >= longest_wait:
            return tuple(limits)


def address_key(host: str) -> str:
    """What the per-address limit counts: the IPv4 address, the /64 of an IPv6 one, anything else as
    given (``unknown`` when the server had no client address)."""
    try:
        ip = ipaddress.ip_address(host)
    except ValueError:
        return host
    if isinstance(ip, ipaddress.IPv6Address):
        if ip.ipv4_mapped is not None:
            return str(ip.ipv4_mapped)
        return str(ipaddress.IPv6Network((ip, 64), strict=False))
    return str(ip)


class LoginThrottle:
    """The sign-in rules over a ``CounterStore`` (see the module's doc for the rules and why)."""

    def __init__(
        self, store: CounterStore, *, account: Sequence[Limit], address: Sequence[Limit]
    ) -> None:
        self.store = store
        self.account = tuple(account)
        self.address = tuple(address)

    @classmethod
    def from_settings(cls, settings: Settings, store: CounterStore) -> LoginThrottle:
        account = account_limits(
            free=settings.login_max_failures,
            first_wait=settings.login_backoff_seconds,
            longest_wait=settings.login_backoff_max_seconds,
        )
        address = (Limit(settings.login_address_max_attempts, settings.login_address_window_seconds),)
        return cls(store, account=account, address=address)

    async def attempt(self, *, username: str, address: str) -> Decision:
        """Count one sign-in attempt against every limit in turn; the first limit it exceeds refuses it
        (the later ones are not counted). Allowed means: check the password now."""
        for key, limit in self._keys(username, address):
            count = await self.store.hit(key, limit.window)
            if count.value > limit.attempts:
                return Decision(allowed=False, retry_after=max(1, math.ceil(count.resets_in)))
        return Decision(allowed=True)

    async def succeeded(self, *, username: str) -> None:
        """The password was right: the account starts over (its address keeps its count)."""
        await self.store.clear(*(key for key, _ in self._account_keys(username)))

    async def not_checked(self, *, username: str) -> None:
        """An allowed attempt's password could not be checked at all: the account gets it back."""
        await self.store.give_back(*(key for key, _ in self._account_keys(username)))

    def _keys(self, username: str, address: str) -> Iterator[tuple[str, Limit]]:
        at = address_key(address)
        for tier, limit in enumerate(self.address):
            yield f"login:address:{at}:{tier}", limit
        yield from self._account_keys(username)

    def _account_keys(self, username: str) -> Iterator[tuple[str, Limit]]:
        name = username.strip().lower()
        for tier, limit in enumerate(self.account):
            yield f"login:account:{name}:{tier}", limit
