"""Ingestion benchmark: what reading a document in the sandbox costs, in pages per second and CPU per page.

Documents are parsed only inside the sandbox (``files.extract``). This measures what that costs against
the same parsing done without it, all in the same run, for PDF (pypdfium2) and DOCX (python-docx):

- **in-process** (the baseline): ``extract_worker.extract`` called in this process, the same code and
  libraries the worker runs, with no process start;
- **subprocess**: the worker started as the server starts it, with the same interpreter, bootstrap and
  limits, but without the sandbox (``tools.sandbox.run_unconfined``): what a fresh interpreter costs;
- **sandbox**: ``files.extract.read``, exactly what the ``file.extract`` job runs (bubblewrap as the
  extraction user, seccomp, prlimit).

Each file is read ``--runs`` times in turn; the tables give the median. Pages per second is pages over
the wall-clock time of one read; CPU per page counts this process (in-process) or the reader's processes
(``RUSAGE_CHILDREN``, which includes bubblewrap and the interpreter it starts). A DOCX has no pages; its
"pages" are blocks of about 2,000 characters (a heading and four paragraphs), the size of a PDF page here.

    python -m bench.knowledge_ingest [--runs 5] [--pages 5,100]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import resource
import statistics
import tempfile
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path

from agentloft.core.settings import Settings, load_settings
from agentloft.files import extract
from agentloft.files.extract_worker import Caps
from agentloft.files.extract_worker import extract as extract_in_process
from agentloft.tools import sandbox

WORDS = ("sandbox", "document", "parser", "page", "text", "knowledge", "retrieval", "chunk", "index", "words",
         "文本", "检索")


def page_text(number: int, words: tuple[str, ...] = WORDS, chars: int = 2000) -> list[str]:
    """About ``chars`` characters of ``words`` in lines of about 80."""
    lines: list[str] = []
    line: list[str] = []
    size = 0
    index = number
    while size < chars:
        word = words[index % len(words)]
        index += 7
        line.append(word)
        size += len(word) + 1
        if sum(len(w) + 1 for w in line) > 80:
            lines.append(" ".join(line))
            line = []
    if line:
        lines.append(" ".join(line))
    return lines


def make_pdf(pages: int) -> bytes:
    from tests.files.samples import pdf

    ascii_only = tuple(w for w in WORDS if w.isascii())  # the hand-written PDF's Helvetica has no CJK
    return pdf(*("\n".join(page_text(number, ascii_only)) for number in range(pages)))


def make_docx(pages: int) -> bytes:
    import io

    import docx

    document = docx.Document()
    for number in range(pages):
        document.add_heading(f"Section {number + 1}", level=2)
        lines = page_text(number)
        quarter = max(len(lines) // 4, 1)
        for start in range(0, len(lines), quarter):
            document.add_paragraph(" ".join(lines[start:start + quarter]))
    out = io.BytesIO()
    document.save(out)
    return out.getvalue()


@dataclass(frozen=True)
class Measured:
    wall_s: float
    cpu_s: float


def caps(settings: Settings) -> Caps:
    return Caps(pages=settings.extract_max_pages, chars=settings.extract_max_chars,
                unzipped_bytes=settings.extract_max_unzipped_bytes, zip_ratio=settings.extract_max_zip_ratio)


async def in_process(settings: Settings, family: str, data: bytes) -> Measured:
    wall, cpu = time.perf_counter(), time.process_time()
    extract_in_process(family, data, caps(settings))
    return Measured(time.perf_counter() - wall, time.process_time() - cpu)


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


async def subprocess_only(settings: Settings, family: str, data: bytes) -> Measured:
    run = extract.reader()
    command = [*run.head, family, str(settings.extract_max_pages), str(settings.extract_max_chars),
               str(settings.extract_max_unzipped_bytes), str(settings.extract_max_zip_ratio)]
    wall, cpu = time.perf_counter(), _children_cpu()
    done = await sandbox.run_unconfined(command, limits=extract.limits(settings),
                                        wall_seconds=settings.extract_wall_seconds, output_cap=64 << 20, stdin=data)
    measured = Measured(time.perf_counter() - wall, _children_cpu() - cpu)
    extract.outcome(done, settings)  # it did read the file
    return measured


async def sandboxed(settings: Settings, family: str, data: bytes) -> Measured:
    wall, cpu = time.perf_counter(), _children_cpu()
    await extract.read(settings, family, data)
    return Measured(time.perf_counter() - wall, _children_cpu() - cpu)


Way = Callable[[Settings, str, bytes], Awaitable[Measured]]
WAYS: dict[str, Way] = {"in-process": in_process, "subprocess": subprocess_only, "sandbox": sandboxed}


@dataclass(frozen=True)
class Row:
    family: str
    pages: int
    way: str
    pages_per_s: float
    cpu_ms_per_page: float
    wall_ms: float


async def measure(settings: Settings, family: str, pages: int, data: bytes, runs: int) -> list[Row]:
    """Every way in turn, ``runs`` times (interleaved, so load on the machine hits them alike), after one
    untimed round (the in-process baseline would otherwise count its libraries' first import)."""
    samples: dict[str, list[Measured]] = {way: [] for way in WAYS}
    for run in WAYS.values():
        await run(settings, family, data)
    for _ in range(runs):
        for way, run in WAYS.items():
            samples[way].append(await run(settings, family, data))
    rows: list[Row] = []
    for way, measured in samples.items():
        wall = statistics.median(m.wall_s for m in measured)
        cpu = statistics.median(m.cpu_s for m in measured)
        rows.append(Row(family, pages, way, pages / wall, cpu * 1000 / pages, wall * 1000))
    return rows


async def bench(runs: int = 5, sizes: tuple[int, ...] = (5, 100)) -> list[Row]:
    """The importable entry point: every row of the tables."""
    with tempfile.TemporaryDirectory(prefix="agentloft-bench-") as data_dir:
        settings = load_settings(data_dir=Path(data_dir), env="test", secret_key="bench")
        await extract.available(settings)  # the one-off probe, outside the timings
        rows: list[Row] = []
        for family, make in (("pdf", make_pdf), ("docx", make_docx)):
            for pages in sizes:
                rows += await measure(settings, family, pages, make(pages), runs)
        return rows


def report(rows: list[Row]) -> str:
    out = ["| file | way | pages/s | CPU ms/page | wall ms per file | sandbox ÷ in-process (wall) |",
           "|---|---|---|---|---|---|"]
    base = {(r.family, r.pages): r for r in rows if r.way == "in-process"}
    for r in rows:
        ratio = r.wall_ms / base[(r.family, r.pages)].wall_ms
        out.append(f"| {r.family.upper()}, {r.pages} pages | {r.way} | {r.pages_per_s:,.0f} | "
                   f"{r.cpu_ms_per_page:.2f} | {r.wall_ms:,.0f} | {ratio:.1f}× |")
    return "\n".join(out)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--pages", default="5,100", help="sizes of the generated files, comma-separated")
    args = parser.parse_args()
    sizes = tuple(int(p) for p in args.pages.split(","))
    print(f"load average {os.getloadavg()[0]:.1f}, {os.cpu_count()} CPUs, {args.runs} runs each")
    print(report(asyncio.run(bench(args.runs, sizes))))


if __name__ == "__main__":
    main()
