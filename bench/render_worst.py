"""The worst inputs of every Pygments lexer, and what they cost the server before and after the render
pool (``web.render_pool``) and its CPU budget (``web.markdown``).

1. **Search.** Every lexer a fenced block can name (its first alias) highlights generated inputs of
   ``--size`` characters (whitespace runs, long lines, nested brackets, quotes, …); each try is capped at
   ``--screen-cap`` CPU seconds. The slowest pairs are timed again at half and full size without that
   cap: the growth exponent says how super-linear they are.
2. **Worst time, before and after.** What real code costs at the size cap (the budget must leave it room),
   then for the worst pairs at 5,000 and 20,000 characters: Pygments alone,
   as every render did before (capped at ``--before-cap`` CPU seconds and shown as ``>cap``), against a
   whole render through the render pool, as requests do now.
3. **Thread or process.** The longest step between two tokens of the worst pairs (a thread holds the
   GIL for that long), then the event loop's lag (a request's worth of loop hops, timed back to back)
   while two worst-case blocks of 20,000 characters highlight with a 0.1 s deadline checked between
   tokens on two threads, against the same renders in the pool's two worker processes.
4. **Another user's requests.** The app in its own process; one user's ``GET /api/auth/me``, one request
   after another, alone (baseline), then while ``--clients`` clients of another user send worst-case
   renders back to back for ``--seconds``. ``--latency-only`` runs just this part, so it can be run
   against the code before the pool for the "before" row (the part uses HTTP only).

    python -m bench.render_worst [--size 1000] [--top 8] [--clients 4] [--seconds 20] [--latency-only]
"""

from __future__ import annotations

import argparse
import asyncio
import math
import os
import signal
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path

import httpx
from pygments import highlight
from pygments.formatters import HtmlFormatter
from pygments.lexer import Lexer
from pygments.lexers import get_all_lexers, get_lexer_by_name
from tests.fakes.openai_server import free_port

from bench.common import ROOT, serve_app, spawn, wait_up
from bench.latency import Latency, probe_times, while_running

# Generated inputs, each a function of the wanted length: shapes that make regex lexers scan far ahead.
PATTERNS: dict[str, Callable[[int], str]] = {
    "space-newline": lambda n: " \n" * (n // 2),
    "spaces": lambda n: " " * n,
    "tab-newline": lambda n: "\t\n" * (n // 2),
    "newlines": lambda n: "\n" * n,
    "long word": lambda n: "a" * n,
    "words": lambda n: "a " * (n // 2),
    "short lines": lambda n: "a\n" * (n // 2),
    "indented lines": lambda n: "    x = 1\n" * (n // 10),
    "parens": lambda n: "(" * (n // 2) + ")" * (n // 2),
    "brackets": lambda n: "[" * (n // 2) + "]" * (n // 2),
    "braces": lambda n: "{" * (n // 2) + "}" * (n // 2),
    "angles": lambda n: "<" * n,
    "double quotes": lambda n: '"' * n,
    "single quotes": lambda n: "'" * n,
    "backslashes": lambda n: "\\" * n,
    "hashes": lambda n: "# " * (n // 2),
    "comment opens": lambda n: "/*" * (n // 2),
    "colons": lambda n: ": " * (n // 2),
    "equals": lambda n: "=" * n,
    "dollars": lambda n: "$" * n,
    "digits": lambda n: "1" * n,
    "dots": lambda n: "." * n,
}
FORMATTER: HtmlFormatter[str] = HtmlFormatter(nowrap=True)


def _cpu_capped(work: Callable[[], object], cap: float) -> float:
    """CPU seconds ``work`` took, or ``inf`` when it was stopped at ``cap``."""
    from agentloft.web.cpu_budget import CpuBudget

    budget = CpuBudget(total=cap, each=cap)
    started = time.process_time()
    done = budget.spend(lambda: work() or True)
    return time.process_time() - started if done is not None else math.inf


def _fenced_lexers() -> dict[str, Lexer]:
    """One lexer per class, by the first alias a fenced block can name it with."""
    lexers: dict[str, Lexer] = {}
    for _name, aliases, _files, _mimes in get_all_lexers():
        if aliases:
            lexers[aliases[0]] = get_lexer_by_name(aliases[0])
    return lexers


def _time(lexer: Lexer, code: str, cap: float) -> float:
    return _cpu_capped(lambda: highlight(code, lexer, FORMATTER), cap)


def search(size: int, cap: float, top: int) -> list[tuple[str, str]]:
    """The ``top`` slowest (alias, pattern) pairs at ``size``, each timed again at half and full size
    with a generous cap for its growth exponent."""
    lexers = _fenced_lexers()
    started = time.perf_counter()
    timed = [(alias, pattern, _time(lexer, make(size), cap))
             for alias, lexer in lexers.items() for pattern, make in PATTERNS.items()]
    timed.sort(key=lambda row: row[2], reverse=True)
    print(f"1. search: {len(lexers)} lexers x {len(PATTERNS)} inputs of {size} characters "
          f"({time.perf_counter() - started:.0f} s, each capped at {cap} s CPU)")
    slow = sum(1 for row in timed if row[2] > 0.05)
    print(f"   {slow} pairs over 50 ms; the {top} slowest, CPU time at {size // 2} and {size} characters:")
    for alias, pattern, _ in timed[:top]:
        half = _time(lexers[alias], PATTERNS[pattern](size // 2), 50 * cap)
        full = _time(lexers[alias], PATTERNS[pattern](size), 50 * cap)
        growth = math.log2(full / half) if math.isfinite(half) and math.isfinite(full) and half > 0 else math.nan
        print(f"   {alias:16} {pattern:16} {_s(half):>9} {_s(full):>9}   exponent {growth:4.1f}")
    return [(alias, pattern) for alias, pattern, _ in timed[:top]]


def _s(seconds: float) -> str:
    return f"{seconds * 1000:.0f} ms" if math.isfinite(seconds) else "capped"


def real_code() -> None:
    """What real code costs at the size cap: this repository's own files, cut to MAX_HIGHLIGHT."""
    from agentloft.web.markdown import MAX_HIGHLIGHT

    src = ROOT / "src" / "agentloft"
    samples = {"python": "**/*.py", "javascript": "web/static/js/*.js", "css": "web/static/css/*.css",
               "html+jinja": "web/templates/**/*.html", "toml": "../../pyproject.toml", "bash": "../../scripts/*"}
    print(f"\n   real code at the size cap ({MAX_HIGHLIGHT} characters of this repository's files), CPU time:")
    for alias, pattern in samples.items():
        text = "".join(p.read_text(errors="replace") for p in sorted(src.glob(pattern)) if p.is_file())
        code = (text * (MAX_HIGHLIGHT // max(len(text), 1) + 1))[:MAX_HIGHLIGHT]
        print(f"   {alias:16} {_time(get_lexer_by_name(alias), code, 10.0) * 1000:7.1f} ms")


async def before_after(worst: list[tuple[str, str]], before_cap: float) -> None:
    from agentloft.web.render_pool import RenderPool

    print(f"\n2. worst time, before (Pygments alone, capped at {before_cap:.0f} s CPU) and after (a whole "
          "render through the render pool, wall time):")
    pool = RenderPool(processes=1, timeout_seconds=60)
    try:
        await pool.render("warm")
        for alias, pattern in worst:
            for size in (5_000, 20_000):
                code = PATTERNS[pattern](size)
                before = _time(get_lexer_by_name(alias), code, before_cap)
                started = time.perf_counter()
                html = await pool.render(f"```{alias}\n{code}```")
                after = time.perf_counter() - started
                shown = "plain" if "<span" not in html else "highlighted"
                before_text = f">{before_cap:.0f} s" if not math.isfinite(before) else f"{before:.2f} s"
                print(f"   {alias:16} {pattern:16} {size:>6} chars  before {before_text:>8}  "
                      f"after {after * 1000:6.0f} ms ({shown})")
    finally:
        await pool.close()


async def _loop_lag(until: Callable[[], bool]) -> Latency:
    """A request's worth of loop hops (20), timed back to back: what any request waits on the loop."""
    async def hops() -> None:
        for _ in range(20):
            await asyncio.sleep(0)

    return await probe_times(hops, until=until, least=50)


def _longest_step(lexer: Lexer, code: str, cap: float) -> float:
    """The longest wall time between two tokens (one ``re`` call or a few), within ``cap`` seconds: how
    long a thread doing this would hold the GIL at once."""
    longest, last = 0.0, time.perf_counter()
    end = last + cap
    for _ in lexer.get_tokens(code):
        now = time.perf_counter()
        longest, last = max(longest, now - last), now
        if now > end:
            break
    return longest


def _deadline_highlight(lexer: Lexer, code: str, seconds: float, times: int) -> None:
    """Highlighting with a deadline checked between tokens, ``times`` over: what a thread pool could do."""
    for _ in range(times):
        deadline = time.monotonic() + seconds
        for _ in lexer.get_tokens(code):
            if time.monotonic() > deadline:
                break


async def threads_or_processes(worst: list[tuple[str, str]], rounds: int) -> None:
    from agentloft.web.render_pool import RenderPool

    print("\n3. thread or process: the longest step between two tokens at 20,000 characters (a thread holds "
          "the GIL that long):")
    for alias, pattern in worst:
        step = _longest_step(get_lexer_by_name(alias), PATTERNS[pattern](20_000), 2.0)
        print(f"   {alias:16} {pattern:16} {step * 1000:7.0f} ms")
    alias, pattern = max(worst, key=lambda w: _longest_step(get_lexer_by_name(w[0]), PATTERNS[w[1]](20_000), 2.0))
    code = PATTERNS[pattern](20_000)
    print(f"   loop lag while two {alias} blocks ({pattern}) highlight {rounds} times over with a 0.1 s budget:")
    quiet = await _loop_lag(lambda: True)
    print(quiet.line("nothing else running"))
    lexer = get_lexer_by_name(alias)
    threads = [threading.Thread(target=_deadline_highlight, args=(lexer, code, 0.1, rounds)) for _ in range(2)]
    for t in threads:
        t.start()
    print((await _loop_lag(lambda: not any(t.is_alive() for t in threads))).line("2 threads, deadline", quiet))
    pool = RenderPool(processes=2, timeout_seconds=60)
    try:
        await asyncio.gather(pool.render("warm"), pool.render("warm"))
        renders = asyncio.gather(*(pool.render(f"```{alias}\n{code}```") for _ in range(2 * rounds)))
        print((await _loop_lag(renders.done)).line("2 worker processes (the pool)", quiet))
        await renders
    finally:
        await pool.close()


def _rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return math.nan


def _children(pid: int) -> list[int]:
    path = Path(f"/proc/{pid}/task/{pid}/children")
    return [int(p) for p in path.read_text().split()] if path.exists() else []


def _memory(server_pid: int) -> str:
    workers = _children(server_pid)
    rss = ", ".join(f"{_rss_mb(p):.0f}" for p in workers) or "none"
    return f"server {_rss_mb(server_pid):.0f} MB, render workers: {rss} MB"


async def _client(base: str, name: str) -> httpx.AsyncClient:
    client = httpx.AsyncClient(base_url=base, timeout=300)
    await client.get("/api/health")
    r = await client.post("/api/auth/signup", json={"username": name, "password": "password123"},
                          headers={"X-CSRF-Token": client.cookies.get("agentloft_csrf") or ""})
    r.raise_for_status()
    client.headers["X-CSRF-Token"] = client.cookies.get("agentloft_csrf") or ""
    return client


async def other_users_requests(base: str, server_pid: int, text: str, clients: int, seconds: float) -> None:
    await wait_up(f"{base}/api/health")
    writer, other = await _client(base, "writer"), await _client(base, "other")
    try:
        async def me() -> None:
            (await other.get("/api/auth/me")).raise_for_status()

        async def render_worst() -> None:
            (await writer.post("/api/render/markdown", json={"text": text})).raise_for_status()

        print(f"\n4. another user's GET /api/auth/me while {clients} clients render a worst case "
              f"({len(text)} characters) back to back for {seconds:.0f} s:")
        print(f"   memory at rest: {_memory(server_pid)}")
        quiet = await probe_times(me, until=lambda: True, least=200)
        print(quiet.line("/me alone"))
        loud, renders = await while_running(me, render_worst, concurrency=clients, seconds=seconds)
        print(loud.line("/me during worst-case renders", quiet)
              + f"  ({'meets' if loud.p95_ms < 100 else 'misses'} the 100 ms goal)")
        done = Latency(renders.times)
        print(done.line("the renders themselves"))
        print(f"   memory after: {_memory(server_pid)}")
    finally:
        await writer.aclose()
        await other.aclose()


def _serve_and_measure(text: str, clients: int, seconds: float) -> None:
    port = free_port()
    with tempfile.TemporaryDirectory() as data_dir:
        os.environ["AGENTLOFT_SIGNUP_OPEN"] = "true"
        proc: subprocess.Popen[bytes] = spawn("bench.render_worst", "--serve", str(port), data_dir)
        try:
            asyncio.run(other_users_requests(f"http://127.0.0.1:{port}", proc.pid, text, clients, seconds))
        finally:
            proc.send_signal(signal.SIGINT)
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--size", type=int, default=1000, help="characters of each generated input")
    parser.add_argument("--screen-cap", type=float, default=0.2, help="CPU seconds per try in the search")
    parser.add_argument("--before-cap", type=float, default=30.0, help="CPU seconds per 'before' highlight")
    parser.add_argument("--top", type=int, default=8, help="slowest pairs to show")
    parser.add_argument("--clients", type=int, default=4, help="concurrent worst-case renders")
    parser.add_argument("--seconds", type=float, default=20.0, help="how long the renders go on")
    parser.add_argument("--latency-only", action="store_true", help="only part 4 (runs on the old code too)")
    parser.add_argument("--serve", nargs=2, metavar=("PORT", "DATA_DIR"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve:
        serve_app(int(args.serve[0]), args.serve[1])
        return
    # The case: 5,000 characters of whitespace froze every request for 11 s.
    worst_alias, worst_pattern = "autohotkey", "space-newline"
    if not args.latency_only:
        worst = search(args.size, args.screen_cap, args.top)[:4]
        real_code()
        asyncio.run(before_after(worst, args.before_cap))
        asyncio.run(threads_or_processes(worst, rounds=5))
    text = f"```{worst_alias}\n{PATTERNS[worst_pattern](5_000)}```"
    _serve_and_measure(text, args.clients, args.seconds)


if __name__ == "__main__":
    main()
