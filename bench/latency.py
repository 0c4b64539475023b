"""How long another user's request takes while something else runs: the measurement several benchmarks
share (sign-in floods, worst-case renders, abuse of any endpoint).

``probe_times`` times one request after another until told to stop; ``while_running`` does so while
``concurrency`` tasks repeat a load for a while, and returns the probe's latencies with what the load
did. Compare with a baseline of the same probe with nothing else running, measured in the same run:

    quiet = await probe_times(me, until=lambda: True, least=200)
    loud, loads = await while_running(me, render_worst, concurrency=4, seconds=20)
    print(loud.line("/me during renders", quiet))
"""

from __future__ import annotations

import asyncio
import statistics
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass


@dataclass(frozen=True)
class Latency:
    """Wall times of a probe, in seconds, in the order they were taken."""

    times: list[float]

    @property
    def p50_ms(self) -> float:
        return statistics.median(self.times) * 1000

    @property
    def p95_ms(self) -> float:
        if len(self.times) < 2:
            return self.times[0] * 1000
        return statistics.quantiles(self.times, n=20, method="inclusive")[-1] * 1000

    @property
    def max_ms(self) -> float:
        return max(self.times) * 1000

    def line(self, name: str, baseline: Latency | None = None) -> str:
        """One printable row: p50, p95, max, count, and the p95 and max ratios against ``baseline``."""
        ratio = f"   p95 {self.p95_ms / baseline.p95_ms:6.2f}x  max {self.max_ms / baseline.max_ms:6.2f}x" \
            if baseline is not None else "   (baseline)"
        return (f"  {name:34} p50 {self.p50_ms:8.1f} ms  p95 {self.p95_ms:8.1f} ms  max {self.max_ms:8.1f} ms  "
                f"({len(self.times)} requests){ratio}")


async def probe_times(probe: Callable[[], Awaitable[object]], *, until: Callable[[], bool],
                      least: int = 1) -> Latency:
    """Time ``probe()`` one call after another until ``until()`` holds, and at least ``least`` times."""
    times: list[float] = []
    while len(times) < least or not until():
        started = time.perf_counter()
        await probe()
        times.append(time.perf_counter() - started)
    return Latency(times)


@dataclass(frozen=True)
class LoadRun:
    """What the load did: the wall time of each of its calls."""

    times: list[float]


async def while_running(probe: Callable[[], Awaitable[object]], load: Callable[[], Awaitable[object]], *,
                        concurrency: int, seconds: float, least: int = 20) -> tuple[Latency, LoadRun]:
    """``probe``'s latencies while ``concurrency`` tasks call ``load()`` back to back, starting new calls
    for ``seconds`` (calls under way then finish; the probe goes on until they have, and at least
    ``least`` times). Bounded in time by ``seconds`` plus the longest load call."""
    deadline = time.monotonic() + seconds
    load_times: list[float] = []

    async def repeat() -> None:
        while time.monotonic() < deadline:
            started = time.perf_counter()
            await load()
            load_times.append(time.perf_counter() - started)

    tasks = [asyncio.create_task(repeat()) for _ in range(concurrency)]
    await asyncio.sleep(0)  # let the load start before the first probe
    latency = await probe_times(probe, until=lambda: all(t.done() for t in tasks), least=least)
    await asyncio.gather(*tasks)
    return latency, LoadRun(load_times)
