from __future__ import annotations

import time

from agentloft.tools.types.text import TOOL_TYPE as TEXT
from tests.tools.types.conftest import Run


async def test_find_with_groups(run: Run) -> None:
    result = await run(TEXT, {"operation": "find", "text": "a1 b22 c333", "pattern": r"(?P<l>[a-z])(\d+)"})
    assert result.success, result.error
    assert result.data["count"] == 3
    assert result.data["matches"][1] == {"match": "b22", "start": 3, "end": 6, "groups": ["b", "22"],
                                         "named": {"l": "b"}}


async def test_find_is_capped(run: Run) -> None:
    result = await run(TEXT, {"operation": "find", "text": "x" * 50, "pattern": "x"}, {"maxMatches": 5})
    assert result.data["count"] == 50 and len(result.data["matches"]) == 5 and result.data["truncated"]


async def test_replace_with_flags_and_backreferences(run: Run) -> None:
    result = await run(TEXT, {"operation": "replace", "text": "Hello World\nhello moon", "pattern": r"^hello (\w+)",
                              "replacement": r"bye \1", "ignoreCase": True, "multiline": True})
    assert result.data == {"result": "bye World\nbye moon", "replacements": 2}
    limited = await run(TEXT, {"operation": "replace", "text": "aaa", "pattern": "a", "replacement": "b",
                               "countLimit": 2})
    assert limited.data == {"result": "bba", "replacements": 2}


async def test_counts(run: Run) -> None:
    result = await run(TEXT, {"operation": "count", "text": "One two  three\nfour\n\nfive six"})
    assert result.data == {"characters": 29, "charactersWithoutSpaces": 22, "words": 6, "lines": 4,
                           "paragraphs": 2}
    with_pattern = await run(TEXT, {"operation": "count", "text": "strawberry", "pattern": "r"})
    assert with_pattern.data["matches"] == 3


async def test_case_and_slug(run: Run) -> None:
    assert (await run(TEXT, {"operation": "upper", "text": "straße"})).data["result"] == "STRASSE"
    assert (await run(TEXT, {"operation": "title", "text": "the old man"})).data["result"] == "The Old Man"
    assert (await run(TEXT, {"operation": "swapcase", "text": "aB"})).data["result"] == "Ab"
    slug = await run(TEXT, {"operation": "slug", "text": "  Crème Brûlée: A How-To (2024)! "})
    assert slug.data["result"] == "creme-brulee-a-how-to-2024"


async def test_catastrophic_regex_is_stopped(run: Run) -> None:
    started = time.perf_counter()
    result = await run(TEXT, {"operation": "find", "text": "a" * 3000, "pattern": r"((a+)\2)+b"},
                       {"regexTimeoutSeconds": 0.2})
    assert time.perf_counter() - started < 3
    assert not result.success and "took longer than 0.2 s" in result.error


async def test_bad_inputs(run: Run) -> None:
    no_pattern = await run(TEXT, {"operation": "find", "text": "x"})
    assert not no_pattern.success and "'find' needs a `pattern`" in no_pattern.error
    bad_pattern = await run(TEXT, {"operation": "find", "text": "x", "pattern": "(unclosed"})
    assert not bad_pattern.success and bad_pattern.error.startswith("invalid regular expression")
    bad_group = await run(TEXT, {"operation": "replace", "text": "x", "pattern": "x", "replacement": r"\9"})
    assert not bad_group.success and "invalid replacement" in bad_group.error
    too_long = await run(TEXT, {"operation": "upper", "text": "x" * 200}, {"maxTextChars": 100})
    assert not too_long.success and "text too long" in too_long.error
    bad_op = await run(TEXT, {"operation": "reverse", "text": "x"})
    assert not bad_op.success and "operation: Input should be" in bad_op.error
