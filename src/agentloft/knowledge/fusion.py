"""Reciprocal rank fusion of rankings of chunks (lexical and vector), pure: no database, no model.

Why RRF: the two rankings' scores are not comparable (bm25 or ``ts_rank`` against a cosine), and each
database scores lexically its own way, so only ranks are fused: a chunk scores ``1 / (k + rank)`` in each
ranking that holds it (rank from 1), summed. ``k = 60`` is the constant of the method's paper (Cormack,
Clarke and Büttcher, 2009) and of the hybrid search of Elasticsearch, OpenSearch and Azure AI Search; it
keeps one ranking's top hit from outweighing a chunk that both rankings place well.

Ties (the same sum) keep the order in which the chunks first appear, rankings taken in the order given:
the caller puts the lexical ranking first, so with equal evidence the exact word match wins.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

RRF_K = 60


@dataclass(frozen=True)
class Ranked:
    """A chunk and its score in some ranking (higher is better)."""

    chunk_id: int
    score: float


def fuse(rankings: Sequence[Sequence[Ranked]], *, k: int = RRF_K) -> list[Ranked]:
    """The chunks of all ``rankings``, best first, each scored by reciprocal rank fusion. A chunk listed
    twice in one ranking counts at its best rank there."""
    scores: dict[int, float] = {}
    for ranking in rankings:
        seen: set[int] = set()
        for rank, hit in enumerate(ranking, start=1):
            if hit.chunk_id in seen:
                continue
            seen.add(hit.chunk_id)
            scores[hit.chunk_id] = scores.get(hit.chunk_id, 0.0) + 1.0 / (k + rank)
    ordered = sorted(scores.items(), key=lambda item: -item[1])  # stable: ties keep first appearance
    return [Ranked(chunk_id, score) for chunk_id, score in ordered]
