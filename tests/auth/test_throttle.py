"""The sign-in rules (``auth.throttle``) with the clock in the test's hand: the in-process counters, the
account's growing wait, the per-address limit, and Argon2 running off the event loop. The same rules
over real HTTP are in ``test_login_throttle.py``."""

from __future__ import annotations

import asyncio

import pytest

from agentloft.auth import service
from agentloft.auth.throttle import (
    Count,
    Decision,
    Limit,
    LoginThrottle,
    MemoryCounters,
    account_limits,
    address_key,
)
from agentloft.core.settings import ConfigError, load_settings


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock() -> Clock:
    return Clock()


def _throttle(clock: Clock, *, address: int = 1_000_000, free: int = 5) -> LoginThrottle:
    account = account_limits(free=free, first_wait=1.0, longest_wait=86400.0)
    return LoginThrottle(MemoryCounters(clock=clock), account=account, address=(Limit(address, 600.0),))


# --- the counters ---------------------------------------------------------------------------------------


async def test_counter_window_starts_at_the_first_hit_and_is_never_extended(clock: Clock) -> None:
    counters = MemoryCounters(clock=clock)
    assert await counters.hit("k", 10) == Count(1, 10)
    clock.now += 4
    assert await counters.hit("k", 10) == Count(2, 6)
    clock.now += 5.5
    assert await counters.hit("k", 10) == Count(3, 0.5)
    clock.now += 0.5
    assert await counters.hit("k", 10) == Count(1, 10)  # the window ended: a new one
    await counters.clear("k", "missing")
    assert await counters.hit("k", 10) == Count(1, 10)


async def test_give_back_lowers_a_live_count_only(clock: Clock) -> None:
    counters = MemoryCounters(clock=clock)
    await counters.hit("k", 10)
    await counters.hit("k", 10)
    await counters.give_back("k", "missing")
    assert await counters.hit("k", 10) == Count(2, 10)  # the same window, one less
    await counters.give_back("k")
    await counters.give_back("k")
    await counters.give_back("k")  # never below zero
    assert await counters.hit("k", 10) == Count(1, 10)
    clock.now += 10
    await counters.give_back("k")  # an ended window is left alone: the next hit starts a new one
    assert await counters.hit("k", 10) == Count(1, 10)
    assert len(counters) == 1


async def test_concurrent_hits_get_distinct_counts() -> None:
    counters = MemoryCounters()
    counts = await asyncio.gather(*(counters.hit("k", 60) for _ in range(50)))
    assert sorted(c.value for c in counts) == list(range(1, 51))


async def test_a_full_table_drops_ended_windows_first_then_the_oldest(clock: Clock) -> None:
    counters = MemoryCounters(clock=clock, max_keys=10)
    for i in range(5):
        await counters.hit(f"short{i}", 1)
    for i in range(5):
        await counters.hit(f"long{i}", 100)
    clock.now += 2
    await counters.hit("new", 100)  # room made from the five ended windows
    assert len(counters) == 6
    for i in range(4):
        await counters.hit(f"more{i}", 100)
    await counters.hit("last", 100)  # full of live windows: the oldest one goes
    assert len(counters) == 10
    assert (await counters.hit("long1", 100)).value == 2
    assert (await counters.hit("long0", 100)).value == 1


# --- the account's growing wait -----------------------------------------------------------------------


def test_default_tiers() -> None:
    tiers = LoginThrottle.from_settings(load_settings(), MemoryCounters()).account
    assert tiers[0] == Limit(5, 1.0) and tiers[1] == Limit(6, 2.0) and tiers[10] == Limit(15, 1024.0)
    assert tiers[-1] == Limit(22, 86400.0) and len(tiers) == 18


async def _waits(throttle: LoginThrottle, clock: Clock, *, checks: int, address: str = "192.0.2.1") -> list[int]:
    """An attacker who tries again the moment he may: the waits he is told, until ``checks`` more of his
    attempts have been checked."""
    waits: list[int] = []
    checked = 0
    while checked < checks:
        decision = await throttle.attempt(username="alice", address=address)
        if decision.allowed:
            checked += 1
        else:
            waits.append(decision.retry_after)
            clock.now += decision.retry_after
    return waits


async def test_wait_doubles_after_the_free_attempts(clock: Clock) -> None:
    throttle = _throttle(clock)
    assert await _waits(throttle, clock, checks=5) == []
    assert await _waits(throttle, clock, checks=10) == [1, 1, 2, 4, 8, 16, 32, 64, 128, 256]


async def test_a_long_run_gets_about_twenty_guesses_a_day(clock: Clock) -> None:
    throttle = _throttle(clock)
    start = clock.now
    await _waits(throttle, clock, checks=22)
    assert clock.now - start < 86400
    await _waits(throttle, clock, checks=23)  # the 23rd waits for the day's window to end
    assert clock.now - start >= 86400


async def test_refused_attempts_do_not_lengthen_the_wait(clock: Clock) -> None:
    throttle = _throttle(clock)
    await _waits(throttle, clock, checks=7)  # 5 free, then the 1 s and 1 s waits
    refused = await throttle.attempt(username="alice", address="192.0.2.1")
    assert refused == Decision(allowed=False, retry_after=2)
    for _ in range(100):  # hammering while refused: never told to wait longer
        clock.now += 0.01
        hammer = await throttle.attempt(username="alice", address="192.0.2.1")
        assert not hammer.allowed and hammer.retry_after <= 2
    # Refused attempts count only up to the tier that refused them, so the next waits stay on the
    # ladder (without the hammering they are 2, 4, 8 s; counted in every tier, the hundred refusals
    # would have filled the day's tier).
    assert max(await _waits(throttle, clock, checks=3)) <= 8


async def test_success_starts_the_account_over(clock: Clock) -> None:
    throttle = _throttle(clock)
    await _waits(throttle, clock, checks=9)
    await throttle.succeeded(username="ALICE")  # usernames are case-insensitive
    assert await _waits(throttle, clock, checks=5) == []


async def test_an_unchecked_attempt_is_given_back_to_the_account_not_the_address(clock: Clock) -> None:
    throttle = _throttle(clock, address=8)
    for _ in range(7):  # the directory is down: seven attempts, none of them checked
        assert (await throttle.attempt(username="alice", address="192.0.2.1")).allowed
        await throttle.not_checked(username="Alice")
    assert await _waits(throttle, clock, checks=1) == []  # the account never had to wait
    assert not (await throttle.attempt(username="bob", address="192.0.2.1")).allowed  # the address counted all


async def test_real_user_from_another_address_after_the_attackers_failures(clock: Clock) -> None:
    """The account's wait after five failures is one second, for every address; the attacker's address
    has used its own limit and stays out, the user's has not."""
    throttle = _throttle(clock, address=6)
    for _ in range(5):
        assert (await throttle.attempt(username="alice", address="198.51.100.66")).allowed
    assert await throttle.attempt(username="alice", address="198.51.100.66") == Decision(False, 1)
    assert await throttle.attempt(username="alice", address="203.0.113.10") == Decision(False, 1)
    clock.now += 1
    assert (await throttle.attempt(username="alice", address="203.0.113.10")).allowed
    await throttle.succeeded(username="alice")
    refused = await throttle.attempt(username="alice", address="198.51.100.66")
    assert not refused.allowed and refused.retry_after == 599  # the address window, not the account's


# --- the per-address limit ------------------------------------------------------------------------------


async def test_address_limit_counts_across_accounts(clock: Clock) -> None:
    throttle = _throttle(clock, address=3)
    for name in ("a", "b", "c"):
        assert (await throttle.attempt(username=name, address="192.0.2.7")).allowed
    assert await throttle.attempt(username="d", address="192.0.2.7") == Decision(False, 600)
    assert (await throttle.attempt(username="d", address="192.0.2.8")).allowed


def test_address_keys() -> None:
    assert address_key("192.0.2.7") == "192.0.2.7"
    assert address_key("2001:db8:1:2:aaaa::1") == address_key("2001:db8:1:2:bbbb::9") == "2001:db8:1:2::/64"
    assert address_key("2001:db8:1:3::1") != address_key("2001:db8:1:2::1")
    assert address_key("::ffff:192.0.2.7") == "192.0.2.7"
    assert address_key("unknown") == "unknown"


def test_forwarded_allow_ips_takes_addresses_and_networks_only() -> None:
    assert load_settings(forwarded_allow_ips=["127.0.0.1", "10.0.0.0/8", "::1"]).forwarded_allow_ips
    for bad in ("*", "localhost", "10.0.0.0/33"):
        with pytest.raises(ConfigError, match="not an IP address or network"):
            load_settings(forwarded_allow_ips=[bad])


# --- Argon2 off the event loop ----------------------------------------------------------------------------


async def _loop_turns_while(work: asyncio.Future[object]) -> int:
    """How many times the event loop ran something else while ``work`` was being done."""
    turns = 0
    while not work.done():
        await asyncio.sleep(0)
        turns += 1
    return turns


async def test_password_hashing_and_checking_leave_the_loop_free() -> None:
    """Done on the loop, each call would finish within the loop's first turn (Argon2 takes tens of ms
    and never yields); done on a thread, the loop keeps turning while it runs."""
    hashing = asyncio.ensure_future(service.hash_password(password="correct horse"))
    assert await _loop_turns_while(hashing) > 10
    stored = hashing.result()
    assert isinstance(stored, str)
    checking = asyncio.ensure_future(service.verify_password(password_hash=stored, password="correct horse"))
    assert await _loop_turns_while(checking) > 10
    assert checking.result() is True
    assert await service.verify_password(password_hash=stored, password="wrong") is False
    assert await service.verify_password(password_hash="not a hash", password="x") is False
