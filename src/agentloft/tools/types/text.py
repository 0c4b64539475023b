"""Text: regex find and replace, counts, case changes and slugs — the string work models get wrong
(counting characters or words, applying a regex exactly).

Regular expressions use the ``regex`` module with a time limit, so a pattern with catastrophic
backtracking is stopped instead of pinning a CPU; matching runs in a worker thread (with the GIL
released) so the server's event loop never waits on it.
"""

from __future__ import annotations

import asyncio
import re
import unicodedata
from typing import Any, Literal

import regex
from pydantic import Field

from agentloft.core.schemas import ApiModel
from agentloft.tools.base import ToolContext, ToolResult, ToolType

Operation = Literal["find", "replace", "count", "upper", "lower", "title", "capitalize", "swapcase", "slug"]


class Config(ApiModel):
    max_text_chars: int = Field(default=1_000_000, ge=100, le=20_000_000, description="Longest text accepted.")
    regex_timeout_seconds: float = Field(
        default=1.0, gt=0, le=30, description="Time limit for one regular expression operation."
    )
    max_matches: int = Field(default=500, ge=1, le=100_000, description="Matches listed at most by 'find'.")


class Input(ApiModel):
    operation: Operation = Field(
        description="find: regex matches with positions and groups; replace: regex substitution; count: "
        "characters, words, lines (and pattern matches if `pattern` is given); upper/lower/title/"
        "capitalize/swapcase: change case; slug: URL slug."
    )
    text: str = Field(description="The text to work on.")
    pattern: str | None = Field(default=None, max_length=5_000, description="Regular expression (Python syntax).")
    replacement: str = Field(
        default="", description="Replacement for 'replace'; \\1 or \\g<name> refer to groups."
    )
    ignore_case: bool = Field(default=False, description="Case-insensitive matching.")
    multiline: bool = Field(default=False, description="^ and $ match at every line.")
    dotall: bool = Field(default=False, description="'.' also matches newlines.")
    count_limit: int = Field(default=0, ge=0, description="Replace at most this many matches (0 = all).")


def _flags(inp: Input) -> int:
    flags = regex.VERSION0
    if inp.ignore_case:
        flags |= regex.IGNORECASE
    if inp.multiline:
        flags |= regex.MULTILINE
    if inp.dotall:
        flags |= regex.DOTALL
    return flags


def slugify(value: str) -> str:
    ascii_text = unicodedata.normalize("NFKD", value).encode("ascii", "ignore").decode()
    return re.sub(r"[^a-z0-9]+", "-", ascii_text.lower()).strip("-")


def counts(value: str) -> dict[str, int]:
    return {
        "characters": len(value),
        "charactersWithoutSpaces": len("".join(value.split())),
        "words": len(value.split()),
        "lines": len(value.splitlines()) if value else 0,
        "paragraphs": len([p for p in re.split(r"\n\s*\n", value) if p.strip()]),
    }


CASES = {
    "upper": str.upper, "lower": str.lower, "title": str.title,
    "capitalize": str.capitalize, "swapcase": str.swapcase, "slug": slugify,
}


def _find(compiled: Any, inp: Input, config: Config) -> dict[str, Any]:
    matches = []
    total = 0
    for m in compiled.finditer(inp.text, timeout=config.regex_timeout_seconds, concurrent=True):
        total += 1
        if len(matches) < config.max_matches:
            matches.append({"match": m.group(0), "start": m.start(), "end": m.end(),
                            "groups": list(m.groups()), "named": m.groupdict() or None})
    return {"count": total, "matches": matches, "truncated": total > len(matches)}


def _regex_op(inp: Input, config: Config) -> dict[str, Any]:
    if not inp.pattern:
        raise ValueError(f"'{inp.operation}' needs a `pattern`")
    try:
        compiled = regex.compile(inp.pattern, _flags(inp))
    except regex.error as exc:
        raise ValueError(f"invalid regular expression: {exc}") from exc
    if inp.operation == "find":
        return _find(compiled, inp, config)
    if inp.operation == "count":
        n = sum(1 for _ in compiled.finditer(inp.text, timeout=config.regex_timeout_seconds, concurrent=True))
        return {**counts(inp.text), "matches": n}
    try:
        result, n = compiled.subn(inp.replacement, inp.text, count=inp.count_limit,
                                  timeout=config.regex_timeout_seconds, concurrent=True)
    except (regex.error, IndexError) as exc:
        raise ValueError(f"invalid replacement: {exc}") from exc
    return {"result": result, "replacements": n}


class TextTool(ToolType[Config, Input]):
    slug = "text"
    name = "Text"
    description = "Regex find and replace, character/word/line counts, case changes and slugs."
    Config = Config
    Input = Input

    def describe(self, config: Config) -> str:
        return (
            "Process text exactly: find regex matches, replace with a regex, count characters/words/lines, "
            "change case, or make a URL slug. Use it instead of counting or rewriting by hand."
        )

    async def execute(self, input: Input, config: Config, ctx: ToolContext) -> ToolResult:
        if len(input.text) > config.max_text_chars:
            return ToolResult.fail(f"text too long ({len(input.text)} > {config.max_text_chars} characters)")
        if input.operation in CASES:
            return ToolResult.ok({"result": CASES[input.operation](input.text)})
        if input.operation == "count" and not input.pattern:
            return ToolResult.ok(counts(input.text))
        try:
            return ToolResult.ok(await asyncio.to_thread(_regex_op, input, config))
        except TimeoutError:
            return ToolResult.fail(
                f"the regular expression took longer than {config.regex_timeout_seconds:g} s (simplify it)"
            )
        except ValueError as exc:
            return ToolResult.fail(str(exc))


TOOL_TYPE = TextTool()
