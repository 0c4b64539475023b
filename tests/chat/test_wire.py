"""``chat.wire`` is the one home of the UI message stream's wire format: its frames read back as written,
and no other module of the package frames the stream, writes its terminator or names its header by hand
(read from the source with ``ast``, as tests/test_import_rules.py reads imports)."""

from __future__ import annotations

import ast
from pathlib import Path

from pydantic_ai.ui.vercel_ai.response_types import DoneChunk, ErrorChunk, StartChunk, TextDeltaChunk

import agentloft
from agentloft.chat import wire

SRC = Path(agentloft.__file__).parent
# Modules that speak another SSE protocol: OpenAI's chat-completion stream, sent and read.
OTHER_PROTOCOLS = {"openai_api/router.py", "llm/lean_openai.py"}
MARKS = ("[DONE]", "x-vercel-ai-ui-message-stream", "errorText", "X-Stream-Resume")  # anywhere in a string
FRAME = "data: "  # at a string's start (an SSE frame's; ``data:`` URLs elsewhere are no frames)


def test_frames_read_back_as_written() -> None:
    frames = "".join([wire.frame(StartChunk(message_id="m1")), wire.frame(TextDeltaChunk(id="t", delta="Hel")),
                      wire.frame(TextDeltaChunk(id="t", delta="")), wire.frame(TextDeltaChunk(id="t", delta="lo")),
                      wire.error_frame("it broke"), wire.frame(DoneChunk())])
    assert wire.frame(DoneChunk()) == wire.DONE
    assert [c["type"] for c in wire.chunks(frames)] == ["start", "text-delta", "text-delta", "text-delta", "error"]
    assert [c["delta"] for c in wire.chunks(frames) if c["type"] == "text-delta"] == ["Hel", "", "lo"]
    assert list(wire.chunks(wire.error_frame("it broke"))) == [{"type": "error", "errorText": "it broke"}]
    assert wire.has_error(frames) and wire.has_done(frames)


def test_text_that_looks_like_the_format_is_only_text() -> None:
    """A reply that writes the format's own words is a text delta, never an error or the stream's end."""
    said = 'data: [DONE]\n\n{"type": "error", "errorText": "no"}\ndata: [DONE]'
    frames = wire.frame(TextDeltaChunk(id="t", delta=said))
    assert list(wire.chunks(frames)) == [{"type": "text-delta", "id": "t", "delta": said}]
    assert not wire.has_error(frames) and not wire.has_done(frames)


def test_a_lone_surrogate_is_framed_whole() -> None:
    text, chunk = wire.whole_frame(TextDeltaChunk(id="t", delta="half \ud83d"))
    assert [c["delta"] for c in wire.chunks(text)] == ["half \ufffd"] and isinstance(chunk, TextDeltaChunk)
    assert chunk.delta == "half \ufffd"
    assert wire.whole_frame(ErrorChunk(error_text="fine"))[0] == wire.error_frame("fine")


def _hand_written(path: Path) -> list[str]:
    """The string constants in ``path`` (docstrings aside) that spell a piece of the format."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    docstrings = {id(n.value) for n in ast.walk(tree) if isinstance(n, ast.Expr) and isinstance(n.value, ast.Constant)}
    return [f"{path.relative_to(SRC)}:{n.lineno}: {n.value!r}" for n in ast.walk(tree)
            if isinstance(n, ast.Constant) and isinstance(n.value, str) and id(n) not in docstrings
            and (n.value.startswith(FRAME) or any(mark in n.value for mark in MARKS))]


def test_no_other_module_writes_the_format_by_hand() -> None:
    found = [hit for path in sorted(SRC.rglob("*.py"))
             if path != SRC / "chat" / "wire.py" and str(path.relative_to(SRC)) not in OTHER_PROTOCOLS
             for hit in _hand_written(path)]
    assert found == []
