"""Token budget arithmetic for read and list results, on the CJK-aware estimate (not chars / 4)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from agentloft.documents.tokens import estimate_tokens

# Keys, ids, dates and JSON punctuation of one list item, roughly.
ITEM_OVERHEAD_TOKENS = 30


def item_tokens(item: dict[str, Any]) -> int:
    return ITEM_OVERHEAD_TOKENS + sum(
        estimate_tokens(item.get(k)) for k in ("title", "summary", "tags")
    )


def fits(text: str | None, budget: int) -> bool:
    return estimate_tokens(text) <= budget


def take_within(items: Iterable[dict[str, Any]], budget: int) -> tuple[list[dict[str, Any]], int]:
    """The longest prefix of ``items`` whose estimated cost stays within ``budget`` (always at least one
    item, so a caller can make progress), and the tokens it spends."""
    kept: list[dict[str, Any]] = []
    spent = 0
    for item in items:
        cost = item_tokens(item)
        if kept and spent + cost > budget:
            break
        kept.append(item)
        spent += cost
    return kept, spent
