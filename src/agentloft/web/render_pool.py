"""Markdown becomes HTML in a few worker processes (``web.render_worker``), never on the event loop.

Every caller of the renderer goes through ``RenderPool``: the render endpoints (live previews, streamed
replies, a saved conversation's batch) and the document page. Why processes, not threads: Python's
``re`` holds the GIL for the whole of one call, and the slow Pygments lexers make calls that take up to
0.8 s at 20,000 characters; from a thread they still froze the loop for that long (bench/render_worst.py,
docs/benchmarks.md). Why our own few lines and not ``concurrent.futures.ProcessPoolExecutor``: its workers
cannot be stopped one by one (Python 3.14 adds that), and a stuck one would hold its slot for good.

- At most ``render_processes`` renders run at once, one per worker; the others wait their turn (a
  semaphore), so a crowd of renders queues instead of piling up threads or processes.
- Workers start with the first render that needs one (each costs about 30 MB once started), stay for
  the next ones (but not after a very large one: ``RECYCLE_AFTER``), and are stopped when the app
  shuts down.
- In a worker, highlighting and math have a CPU budget (``markdown.render_job``). A render that still
  takes longer than ``render_timeout_seconds`` stops its worker (killed; the next render starts a new one)
  and is done again without highlighting and math; if that is too slow as well, the page shows the text
  itself, escaped (``markdown.source_html``). A worker that dies is treated the same way.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Annotated, Any

from fastapi import Depends, FastAPI, Request

import agentloft
from agentloft.web.markdown import source_html
from agentloft.web.render_worker import LENGTH, frame

log = logging.getLogger(__name__)

# How long a new worker may take to import its modules and say it is ready (0.2 s on an idle machine).
START_SECONDS = 30.0
# A worker that rendered more characters than this in one job is stopped afterwards: Python keeps the
# memory it grew (31 MB at rest; 51 MB after 200,000 characters of markdown, 94 MB after 1,000,000), and
# a new worker costs 0.2 s of CPU. Documents hold at most 200,000 characters.
RECYCLE_AFTER = 200_000


def _worker_env() -> dict[str, str]:
    """The server's environment, with the folder that holds this ``agentloft`` first on the path, so the
    worker runs the same code however the server found it."""
    root = str(Path(agentloft.__file__).resolve().parents[1])
    paths = [root, *([os.environ["PYTHONPATH"]] if os.environ.get("PYTHONPATH") else [])]
    return {**os.environ, "PYTHONPATH": os.pathsep.join(paths)}


class _Worker:
    """One worker process, used by one render at a time."""

    def __init__(self, process: asyncio.subprocess.Process) -> None:
        self.process = process

    @classmethod
    async def start(cls) -> _Worker:
        process = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "agentloft.web.render_worker",
            stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, env=_worker_env(),
        )
        worker = cls(process)
        try:
            await asyncio.wait_for(worker._answer(), START_SECONDS)
        except BaseException:
            await worker.stop()
            raise
        return worker

    async def render(self, texts: list[str], *, decorate: bool) -> list[str]:
        stdin = self.process.stdin
        if stdin is None:  # never: started with a pipe
            raise RuntimeError("render worker without stdin")
        stdin.write(frame({"texts": texts, "decorate": decorate}))
        await stdin.drain()
        html: list[str] = (await self._answer())["html"]
        return html

    async def _answer(self) -> Any:
        stdout = self.process.stdout
        if stdout is None:  # never: started with a pipe
            raise RuntimeError("render worker without stdout")
        (length,) = LENGTH.unpack(await stdout.readexactly(LENGTH.size))
        return json.loads(await stdout.readexactly(length))

    def kill(self) -> None:
        """Stop the process now (asyncio reaps it)."""
        if self.process.returncode is None:
            self.process.kill()

    async def stop(self) -> None:
        self.kill()
        await self.process.wait()


class RenderPool:
    """This process's render workers; ``render``/``render_many`` are what request handlers call."""

    def __init__(self, *, processes: int, timeout_seconds: float) -> None:
        self.timeout_seconds = timeout_seconds
        self._slots = asyncio.Semaphore(processes)
        self._idle: list[_Worker] = []
        self._workers: set[_Worker] = set()
        self._closed = False
        self.running = 0
        """Renders in a worker right now (at most ``processes``)."""
        self.waiting = 0
        """Renders waiting for a worker to be free."""

    @property
    def pids(self) -> list[int]:
        """The workers' process ids, busy or idle (none before the first render)."""
        return [w.process.pid for w in self._workers]

    async def render(self, text: str) -> str:
        return (await self.render_many([text]))[0]

    async def render_many(self, texts: list[str]) -> list[str]:
        """The HTML of each text, in order, rendered in one worker with one budget (see the module)."""
        self.waiting += 1
        try:
            await self._slots.acquire()
        finally:
            self.waiting -= 1
        self.running += 1
        try:
            html = await self._attempt(texts, decorate=True)
            if html is None:
                html = await self._attempt(texts, decorate=False)
        finally:
            self.running -= 1
            self._slots.release()
        return html if html is not None else [source_html(t) for t in texts]

    async def _attempt(self, texts: list[str], *, decorate: bool) -> list[str] | None:
        """One try in a worker; None when the worker failed or ran out of time (it is stopped)."""
        if self._closed:
            return None
        worker = self._idle.pop() if self._idle else None
        try:
            if worker is None:
                worker = await _Worker.start()
                self._workers.add(worker)
            html = await asyncio.wait_for(worker.render(texts, decorate=decorate), self.timeout_seconds)
        except Exception as exc:  # any way a worker fails (timeout, exit, broken pipe) has the same answer
            log.warning("render of %d characters %s failed (%r): stopping its worker", sum(map(len, texts)),
                        "with highlighting" if decorate else "without highlighting", exc)
            self._drop(worker)
            return None
        except BaseException:  # cancelled: its answer would reach nobody, and the next job must not read it
            self._drop(worker)
            raise
        if self._closed or sum(map(len, texts)) > RECYCLE_AFTER:
            self._drop(worker)
        else:
            self._idle.append(worker)
        return html

    def _drop(self, worker: _Worker | None) -> None:
        if worker is not None:
            worker.kill()
            self._workers.discard(worker)

    async def close(self) -> None:
        """Stop every worker; renders still running get the escaped text."""
        self._closed = True
        workers, self._workers, self._idle = list(self._workers), set(), []
        for worker in workers:
            await worker.stop()


@asynccontextmanager
async def serving(app: FastAPI) -> AsyncIterator[None]:
    """The app's render pool, ``app.state.render_pool``, from start-up to shutdown (a lifespan of the
    pages' router, entered after the app's own, whose runtime holds the settings)."""
    settings = app.state.runtime.settings
    pool = RenderPool(processes=settings.render_processes, timeout_seconds=settings.render_timeout_seconds)
    app.state.render_pool = pool
    try:
        yield
    finally:
        await pool.close()


async def _render_pool(request: Request) -> RenderPool:
    pool: RenderPool = request.app.state.render_pool
    return pool


Renderer = Annotated[RenderPool, Depends(_render_pool)]
