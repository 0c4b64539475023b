"""Rendering never stalls the server: every render runs in a render worker process (``web.render_pool``),
highlighting and math have a CPU budget there, a render that takes too long is done again without them,
and at most ``render_processes`` renders run at once.

Worker processes are paused with SIGSTOP where a test needs a render to be in progress for as long as it
looks: no timing, no sleeps."""

from __future__ import annotations

import asyncio
import os
import re
import signal
from collections.abc import Callable, Iterator
from html import escape
from pathlib import Path
from typing import Any

import pytest

from agentloft.web.cpu_budget import CpuBudget
from agentloft.web.markdown import MAX_HIGHLIGHT, render
from agentloft.web.render_pool import RECYCLE_AFTER, RenderPool
from tests.support import ApiClient, LiveApp, signup, start_app, wait_until

# Pygments' autohotkey lexer on whitespace: 5,000 characters froze every request for 11 s (the issue).
WORST = " \n" * 2500
PYTHON = "def f(x):\n    return x < 1\n"


def fenced(lang: str, code: str) -> str:
    return f"```{lang}\n{code}```"


def plain_block(lang: str, code: str) -> str:
    """A fenced block as the page shows it unhighlighted: the code escaped, no token spans."""
    return f'<pre><code class="language-{lang}">{escape(code)}</code></pre>'


HIGHLIGHTED_PYTHON = '<code class="language-python"><span class="k">def</span>'


@pytest.fixture
def serve(tmp_path: Path, template_db: Path) -> Iterator[Callable[..., LiveApp]]:
    """Start an app with the given settings (open sign-up: each client signs itself up); all are stopped
    afterwards."""
    started: list[LiveApp] = []

    def start(**settings: Any) -> LiveApp:
        live = start_app(tmp_path / f"data{len(started)}", template_db, signup_open=True, **settings)
        started.append(live)
        return live

    yield start
    for live in started:
        live.stop()


def pool_of(live: LiveApp) -> RenderPool:
    pool: RenderPool = live.server.server.config.app.state.render_pool
    return pool


def signed_in(live: LiveApp, name: str) -> ApiClient:
    client = live.client()
    signup(client, name)
    return client


def test_a_worst_case_block_is_shown_unhighlighted_and_real_code_still_highlighted(user: ApiClient) -> None:
    text = fenced("python", PYTHON) + "\n\n" + fenced("autohotkey", WORST)
    html = user.ok("POST", "/api/render/markdown", json={"text": text})["html"]
    assert HIGHLIGHTED_PYTHON in html
    assert plain_block("autohotkey", WORST) in html
    # Above the size cap, even a fast lexer leaves the block as it is.
    long_code = PYTHON * (MAX_HIGHLIGHT // len(PYTHON) + 1)
    html = user.ok("POST", "/api/render/markdown", json={"text": fenced("python", long_code)})["html"]
    assert html == plain_block("python", long_code) + "\n"


def test_the_blocks_of_a_render_share_one_budget(user: ApiClient) -> None:
    """Past the render's total, later blocks stay unhighlighted, even of a fast lexer: a page of many
    worst-case blocks costs the total, not the sum of every block's allowance."""
    worst_blocks = "\n\n".join(fenced("autohotkey", WORST) for _ in range(8))
    text = worst_blocks + "\n\n" + fenced("python", PYTHON)
    html = user.ok("POST", "/api/render/markdown", json={"text": text})["html"]
    assert html.count(plain_block("autohotkey", WORST)) == 8
    assert plain_block("python", PYTHON) in html
    # In a batch too: one budget for the request, its texts in order.
    body = user.ok("POST", "/api/render/markdown/batch", json={"texts": [worst_blocks, fenced("python", PYTHON)]})
    assert body["html"][1] == plain_block("python", PYTHON) + "\n"


def test_render_refuses_to_run_on_an_event_loop() -> None:
    async def on_the_loop() -> str:
        return render("*hi*")

    with pytest.raises(RuntimeError, match="render_pool"):
        asyncio.run(on_the_loop())
    assert render("*hi*") == "<p><em>hi</em></p>\n"  # off the loop it renders


def test_a_budget_stops_a_single_long_regex_call() -> None:
    """Catastrophic backtracking is one ``re`` call that never yields: the CPU timer stops it anyway."""
    budget = CpuBudget(total=1.0, each=0.05)
    assert budget.spend(lambda: re.match(r"(a+)+$", "a" * 64 + "b")) is None
    assert budget.spend(lambda: "quick") == "quick"
    assert budget.spent > 0  # what was stopped counts against the total
    spent_out = CpuBudget(total=0.0, each=0.05)
    ran: list[bool] = []
    assert spent_out.spend(lambda: ran.append(True)) is None and not ran  # nothing left: not even started


def _render_path(client: ApiClient, path: str, doc_id: str) -> str:
    """The HTML of the worst-case text through one of the three ways a page gets rendered markdown."""
    if path == "render":
        return client.ok("POST", "/api/render/markdown", json={"text": WORST_TEXT})["html"]
    if path == "batch":
        return client.ok("POST", "/api/render/markdown/batch", json={"texts": ["*a*", WORST_TEXT]})["html"][1]
    page = client.get(f"/agent-documents/{doc_id}")
    assert page.status_code == 200
    return page.text


WORST_TEXT = fenced("python", PYTHON) + "\n\n" + fenced("autohotkey", WORST)


@pytest.mark.parametrize("path", ["render", "batch", "document page"])
async def test_other_requests_are_answered_while_a_render_is_in_progress(
    serve: Callable[..., LiveApp], path: str
) -> None:
    live = serve(render_processes=1)
    pool = pool_of(live)
    writer, other = signed_in(live, "writer"), signed_in(live, "other")
    doc = writer.ok("POST", "/api/agent-documents", json={"title": "t", "content": WORST_TEXT, "type": "document"})
    writer.ok("POST", "/api/render/markdown", json={"text": "warm"})  # the pool's one worker, now idle
    (pid,) = pool.pids
    os.kill(pid, signal.SIGSTOP)
    try:
        pending = asyncio.create_task(asyncio.to_thread(_render_path, writer, path, doc["id"]))
        await wait_until(lambda: pool.running == 1)
        me = await asyncio.to_thread(other.get, "/api/auth/me")
        assert me.status_code == 200 and me.json()["username"] == "other"
        assert not pending.done()
    finally:
        os.kill(pid, signal.SIGCONT)
    html = await pending
    assert HIGHLIGHTED_PYTHON in html and plain_block("autohotkey", WORST) in html
    assert pool.pids == [pid]  # the same worker, kept for the next render


async def test_at_most_render_processes_renders_run_and_the_rest_wait(serve: Callable[..., LiveApp]) -> None:
    live = serve(render_processes=2)
    pool = pool_of(live)
    client = signed_in(live, "writer")
    texts = [f"**{i}**\n\n" + fenced("autohotkey", WORST) for i in range(4)]
    stopped: list[int] = []

    def post(text: str) -> str:
        return client.ok("POST", "/api/render/markdown", json={"text": text})["html"]

    try:
        tasks = []
        for i, text in enumerate(texts):
            tasks.append(asyncio.create_task(asyncio.to_thread(post, text)))
            if i < 2:  # each of the first two starts a worker, paused as soon as it is there
                await wait_until(lambda n=i + 1: len(pool.pids) == n, limit_s=30)
                new = next(p for p in pool.pids if p not in stopped)
                os.kill(new, signal.SIGSTOP)
                stopped.append(new)
        await wait_until(lambda: pool.waiting == 2)
        assert pool.running == 2 and sorted(pool.pids) == sorted(stopped)
    finally:
        for pid in stopped:
            os.kill(pid, signal.SIGCONT)
    results = await asyncio.gather(*tasks)
    for i, html in enumerate(results):
        assert html.startswith(f"<p><strong>{i}</strong></p>") and plain_block("autohotkey", WORST) in html
    assert sorted(pool.pids) == sorted(stopped) and pool.running == pool.waiting == 0


def test_a_render_past_the_timeout_is_done_again_without_highlighting(serve: Callable[..., LiveApp]) -> None:
    """Eight worst-case blocks spend the whole CPU budget (0.5 s), longer than this app's timeout: the
    worker is stopped and the text rendered again without highlighting, by a new worker."""
    live = serve(render_timeout_seconds=0.25)
    pool = pool_of(live)
    client = signed_in(live, "writer")
    text = fenced("python", PYTHON) + "\n\n" + "\n\n".join(fenced("autohotkey", WORST) for _ in range(8))
    html = client.ok("POST", "/api/render/markdown", json={"text": text})["html"]
    assert html.startswith(plain_block("python", PYTHON))  # nothing highlighted: the second try
    assert html.count(plain_block("autohotkey", WORST)) == 8
    (second,) = pool.pids
    # The next render is highlighted again, by the worker that did the second try.
    html = client.ok("POST", "/api/render/markdown", json={"text": fenced("python", PYTHON)})["html"]
    assert HIGHLIGHTED_PYTHON in html and pool.pids == [second]


def test_a_render_too_slow_even_plain_shows_the_text_itself(serve: Callable[..., LiveApp]) -> None:
    live = serve(render_timeout_seconds=0.05)
    client = signed_in(live, "writer")
    text = "Some *prose* with <b>tags</b> & a [link](https://example.com).\n\n" * 8000  # ~0.6 s to render
    html = client.ok("POST", "/api/render/markdown", json={"text": text})["html"]
    assert html == f"<pre>{escape(text)}</pre>"
    assert client.ok("POST", "/api/render/markdown", json={"text": ""})["html"] == ""


async def test_a_worker_that_dies_mid_render_is_replaced(serve: Callable[..., LiveApp]) -> None:
    live = serve(render_processes=1)
    pool = pool_of(live)
    client = signed_in(live, "writer")
    client.ok("POST", "/api/render/markdown", json={"text": "warm"})
    (pid,) = pool.pids
    os.kill(pid, signal.SIGSTOP)
    pending = asyncio.create_task(asyncio.to_thread(
        client.ok, "POST", "/api/render/markdown", json={"text": fenced("python", PYTHON)}))
    await wait_until(lambda: pool.running == 1)
    os.kill(pid, signal.SIGKILL)
    body = await pending
    assert body["html"] == plain_block("python", PYTHON) + "\n"  # the second try, without highlighting
    (replacement,) = pool.pids
    assert replacement != pid
    html = client.ok("POST", "/api/render/markdown", json={"text": fenced("python", PYTHON)})["html"]
    assert HIGHLIGHTED_PYTHON in html


def test_a_worker_is_not_kept_after_a_very_large_render(serve: Callable[..., LiveApp]) -> None:
    """Its memory grew with the text and Python keeps it: the next render gets a new worker."""
    live = serve()
    pool = pool_of(live)
    client = signed_in(live, "writer")
    client.ok("POST", "/api/render/markdown", json={"text": "*x*"})
    (small,) = pool.pids
    html = client.ok("POST", "/api/render/markdown", json={"text": "word " * (RECYCLE_AFTER // 5 + 1)})["html"]
    assert html.startswith("<p>word word")
    assert pool.pids == []
    assert client.ok("POST", "/api/render/markdown", json={"text": "*x*"})["html"] == "<p><em>x</em></p>\n"
    assert len(pool.pids) == 1 and pool.pids != [small]


def test_the_workers_stop_with_the_app(serve: Callable[..., LiveApp]) -> None:
    live = serve()
    client = signed_in(live, "writer")
    client.ok("POST", "/api/render/markdown", json={"text": "*x*"})
    (pid,) = pool_of(live).pids
    live.stop()
    assert not Path(f"/proc/{pid}").exists()  # killed and reaped before shutdown finished
