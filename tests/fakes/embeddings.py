"""The fake embedding model's vectors: deterministic, and near for texts that share words or pieces of them.

A text's features are its lower-cased words (weight 1) and their character bigrams (weight 0.5, with the
word's edges marked, so "index" and "indexing" share most of theirs); a run of CJK characters gives each
character and each pair of neighbours, the way a reader of Chinese finds one- and two-character terms.
Each feature is hashed (CRC-32, the same in every process) to one of ``dim`` places with a sign taken from
the hash too (signed hashing: collisions cancel out on average instead of all adding up), and the vector
is L2-normalised. So the dot product of two vectors grows with what their texts share, as a real model's
does for texts about the same thing; it knows no synonyms, which a retrieval test must not expect of it.
"""

from __future__ import annotations

import math
import re
import zlib

DIM = 256
_WORD = re.compile(r"[^\W\d_]+|\d+", re.UNICODE)
_CJK = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]+")


def features(text: str) -> list[tuple[str, float]]:
    """The weighted features the module's doc describes."""
    out: list[tuple[str, float]] = []
    lowered = text.lower()
    for run in _CJK.findall(lowered):
        out.extend((ch, 1.0) for ch in run)
        out.extend((run[i:i + 2], 1.0) for i in range(len(run) - 1))
    for word in _WORD.findall(_CJK.sub(" ", lowered)):
        out.append((word, 1.0))
        marked = f"<{word}>"
        out.extend((marked[i:i + 2], 0.5) for i in range(len(marked) - 1))
    return out


def vector(text: str, dim: int = DIM) -> list[float]:
    """The text's unit vector (all zeros for a text with no features)."""
    values = [0.0] * dim
    for feature, weight in features(text):
        h = zlib.crc32(feature.encode())
        values[h % dim] += weight if (h >> 31) & 1 else -weight
    norm = math.sqrt(sum(v * v for v in values))
    return [v / norm for v in values] if norm else values
