"""``core.db.storable`` and ``whole_characters``: what no database stores (U+0000 on PostgreSQL, a lone UTF-16
surrogate on both) becomes U+FFFD in a model's or a tool's text, at any depth, keys included; the stream
and the model history keep U+0000 (JSON carries it) but not half a pair (UTF-8 cannot encode it)."""

from __future__ import annotations

from agentloft.core.db import storable, whole_characters

RAW = {"k\udfff": ["a\x00b", ("half\ud83d", 3)], "fine": "日本\U0001f600"}


def test_storable_replaces_nul_and_lone_surrogates_everywhere() -> None:
    assert storable(RAW) == {"k\ufffd": ["a\ufffdb", ["half\ufffd", 3]], "fine": "日本\U0001f600"}


def test_whole_characters_keeps_nul() -> None:
    assert whole_characters(RAW) == {"k\ufffd": ["a\x00b", ["half\ufffd", 3]], "fine": "日本\U0001f600"}
