"""What the python tool's OS sandbox costs per run.

Runs the same snippets through ``tools.sandbox.run_confined`` (bubblewrap, as the sandbox user, with
prlimit) and, as the baseline in the same run, ``run_unconfined`` (the same interpreter and limits through
prlimit, no namespaces, as the server's user), alternating so that load changes hit both alike. Prints the
median and p95 wall time of each and the difference. Needs root and the sandbox user
(``scripts/setup-sandbox``).

    python -m bench.python_sandbox [--runs 30]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time
from collections.abc import Awaitable, Callable

from agentloft.tools import sandbox
from agentloft.tools.types.python_exec import Config, interpreter, limits

SNIPPETS = {
    "print(1)": "print(1)",
    "stdlib work (json + sqlite3 + re, ~50 ms)": (
        "import json, re, sqlite3\ndb = sqlite3.connect(':memory:')\ndb.execute('create table t(x)')\n"
        "db.executemany('insert into t values (?)', [(i,) for i in range(20000)])\n"
        "total = db.execute('select sum(x) from t').fetchone()\n"
        "print(json.dumps(total), len(re.findall('1', str(list(range(20000))))))"
    ),
}


async def timed(run: Callable[[], Awaitable[sandbox.Completed]]) -> float:
    started = time.perf_counter()
    done = await run()
    assert done.exit_code == 0, done.stderr
    return (time.perf_counter() - started) * 1000


def summary(samples: list[float]) -> tuple[float, float]:
    ordered = sorted(samples)
    return statistics.median(ordered), ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]


async def main(runs: int) -> None:
    config = Config()
    exe, prefixes = interpreter()
    user = await sandbox.ensure_sandbox("agentloft-sandbox", [exe, "-I", "-c", "pass"], prefixes)
    bounds = limits(config)
    print(f"{runs} runs each, alternating; interpreter {exe}")
    print("| snippet | unconfined p50 / p95 (baseline) | sandboxed p50 / p95 | added p50 |")
    print("|---|---|---|---|")
    for label, code in SNIPPETS.items():
        command = [exe, "-I", "-B", "-X", "utf8", "-c", code]

        def confined(command: list[str] = command) -> Awaitable[sandbox.Completed]:
            return sandbox.run_confined(command, user=user, limits=bounds, wall_seconds=30, output_cap=4096,
                                        read_only=prefixes)

        def unconfined(command: list[str] = command) -> Awaitable[sandbox.Completed]:
            return sandbox.run_unconfined(command, limits=bounds, wall_seconds=30, output_cap=4096)

        base: list[float] = []
        boxed: list[float] = []
        for _ in range(runs):
            base.append(await timed(unconfined))
            boxed.append(await timed(confined))
        (b50, b95), (s50, s95) = summary(base), summary(boxed)
        print(f"| {label} | {b50:.0f} / {b95:.0f} ms | {s50:.0f} / {s95:.0f} ms | +{s50 - b50:.0f} ms "
              f"({s50 / b50:.2f}×) |")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=30)
    asyncio.run(main(parser.parse_args().runs))
