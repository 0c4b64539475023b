"""A render worker: ``python -m agentloft.web.render_worker``, started by ``web.render_pool``.

It reads jobs from stdin and answers on stdout, one at a time, each a frame: four bytes of length (big
endian), then that many bytes of JSON. The first frame it writes says it is ready (modules imported,
parser built), so the pool's timeout counts rendering only. A job is ``{"texts": [...], "decorate":
bool}``, its answer ``{"html": [...]}`` (``markdown.render_job``). It ends when stdin closes, which is
also what happens when the server that started it dies.
"""

from __future__ import annotations

import json
import signal
import struct
import sys
from typing import Any, BinaryIO

LENGTH = struct.Struct(">I")


def frame(message: Any) -> bytes:
    """``message`` as one frame (the pool writes jobs with it, the worker its answers)."""
    body = json.dumps(message, ensure_ascii=False).encode()
    return LENGTH.pack(len(body)) + body


def _write(out: BinaryIO, message: Any) -> None:
    out.write(frame(message))
    out.flush()


def _read(source: BinaryIO) -> Any:
    """The next message, or None at the end of the input."""
    header = source.read(LENGTH.size)
    if len(header) < LENGTH.size:
        return None
    (length,) = LENGTH.unpack(header)
    return json.loads(source.read(length))


def main() -> None:
    # Ctrl-C in a terminal reaches the whole process group: the server decides when its workers end.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    jobs, answers = sys.stdin.buffer, sys.stdout.buffer
    sys.stdout = sys.stderr  # nothing else may write into the answers' stream

    from agentloft.web import markdown

    markdown.render("warm `up`")  # imports and the parser, before the first job is timed
    _write(answers, {})
    while (job := _read(jobs)) is not None:
        _write(answers, {"html": markdown.render_job(job["texts"], decorate=job["decorate"])})


if __name__ == "__main__":
    main()
