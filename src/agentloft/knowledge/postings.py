"""Lexical ranking from term postings kept in memory: what answers a search in milliseconds at 100,000
chunks, where the SQL ranking (``knowledge.search``) scores every chunk that holds a common token.

A collection's postings are loaded once from its chunks' ``terms`` (``knowledge.terms``: split on spaces,
exactly the tokens SQLite FTS5's ``ascii`` tokenizer reads there) and kept in ``knowledge.cache``, checked
against the database before every search. For each token: the positions of the chunks holding it and how
often each holds it (numpy arrays, one slice per token); per chunk its token count. A query adds each of
its tokens' BM25 weights into a score array at its postings' positions and takes the best with
``np.argpartition``: the work is the postings of the query's tokens, not a pass over every chunk.

The ranking is BM25 as SQLite FTS5's ``bm25()`` computes it (k1 = 1.2, b = 0.75, inverse document frequency
``ln((N - n + 0.5) / (n + 0.5))``, ``1e-6`` where that is not positive), over the asked collections taken as
one index: N, each token's n and the mean chunk length are theirs, not the instance's. The tokens more
than half of those chunks hold are left out as in SQL (``search.common_left_out``), with the exact
shares here, not the instance's estimates. So on one collection of a database that holds no other, the
top k is FTS5's (the tests hold it to that); on PostgreSQL it replaces ``ts_rank`` weighted by IDF
(recall on the labelled set side by side in docs/benchmarks.md). Leaving common tokens out is no longer
for speed here (a common token's postings are one vectorised add) but keeps the answer the SQL one.

Why not ``bm25s`` (pre-tokenized input, scipy sparse matrices): measured on this machine (2026-12-03,
the benchmark's generated chunks, its 60 three-word queries, top 10, the same tokens for both), its
``retrieve`` took 1.4 ms at the median (p95 2.2) at 10,000 chunks and 14.0 ms (p95 17.4) at 100,000,
against 0.33 ms (0.50) and 2.8 ms (4.0) here; building took 0.20 s and 2.6 s against 0.09 s and 1.35 s.
It also needs scipy (~40 MB installed) beside numpy, its Robertson IDF has no floor (FTS5's does), and an
index covers one corpus, so several collections could not be scored as one without an index per
combination. 100,000 chunks of ~40 words take 20 MB of postings.
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt
from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from agentloft.knowledge.fusion import Ranked
from agentloft.knowledge.models import KnowledgeChunk

K1 = 1.2
B = 0.75
IDF_FLOOR = 1e-6  # FTS5's, for a token at least half of the chunks hold
DICT_ENTRY_BYTES = 100  # a vocabulary entry's slot, key object and int, roughly (for the cache bound)
Ints = npt.NDArray[np.int64]
Floats = npt.NDArray[np.float64]


@dataclass(frozen=True)
class Postings:
    """One collection's chunks as postings: token ``t`` of ``vocab`` is held by the chunks at positions
    ``docs[offsets[t]:offsets[t + 1]]``, ``tfs`` times each; chunk position ``i`` is chunk ``ids[i]``
    with ``lengths[i]`` tokens."""

    ids: Ints
    lengths: Floats
    vocab: dict[str, int]
    offsets: Ints
    docs: npt.NDArray[np.int32]
    tfs: npt.NDArray[np.float32]
    vocab_bytes: int

    @property
    def nbytes(self) -> int:
        arrays = (self.ids, self.lengths, self.offsets, self.docs, self.tfs)
        return int(sum(a.nbytes for a in arrays)) + self.vocab_bytes

    def df(self, token: str) -> int:
        t = self.vocab.get(token)
        return 0 if t is None else int(self.offsets[t + 1] - self.offsets[t])


def build(ids: Sequence[int], term_strings: Sequence[str]) -> Postings:
    """The postings of chunks ``ids`` with these ``terms`` (CPU only: the caller runs it in a thread)."""
    vocab: dict[str, int] = {}
    lengths = np.empty(len(ids), dtype=np.float64)
    token_ids: list[int] = []
    for i, terms in enumerate(term_strings):
        tokens = terms.split()
        lengths[i] = len(tokens)
        token_ids.extend([vocab.setdefault(t, len(vocab)) for t in tokens])
    n = max(len(ids), 1)
    doc_of = np.repeat(np.arange(len(ids), dtype=np.int64), lengths.astype(np.int64))
    pairs, tfs = np.unique(np.asarray(token_ids, dtype=np.int64) * n + doc_of, return_counts=True)
    offsets = np.zeros(len(vocab) + 1, dtype=np.int64)
    np.cumsum(np.bincount(pairs // n, minlength=len(vocab)), out=offsets[1:])
    return Postings(ids=np.asarray(ids, dtype=np.int64), lengths=lengths, vocab=vocab, offsets=offsets,
                    docs=(pairs % n).astype(np.int32), tfs=tfs.astype(np.float32),
                    vocab_bytes=sys.getsizeof(vocab) + sum(len(t) for t in vocab) + DICT_ENTRY_BYTES * len(vocab))


async def load(db: AsyncSession, collection_id: str) -> Postings:
    rows = (await db.execute(select(KnowledgeChunk.id, KnowledgeChunk.terms)
                             .where(KnowledgeChunk.collection_id == collection_id)
                             .order_by(KnowledgeChunk.id))).all()
    return await asyncio.to_thread(build, [r[0] for r in rows], [r[1] for r in rows])


def shares(sets: Sequence[Postings], tokens: Sequence[str]) -> dict[str, float]:
    """The share of the chunks of ``sets`` that hold each token (for ``search.common_left_out``)."""
    total = sum(len(p.ids) for p in sets)
    return {t: sum(p.df(t) for p in sets) / total for t in tokens} if total else {}


def idfs(sets: Sequence[Postings], tokens: Sequence[str]) -> dict[str, float]:
    """Each token's inverse document frequency over ``sets`` taken as one index (FTS5's formula)."""
    total = sum(len(p.ids) for p in sets)
    out: dict[str, float] = {}
    for token in tokens:
        n = sum(p.df(token) for p in sets)
        if n:
            idf = float(np.log((total - n + 0.5) / (n + 0.5)))
            out[token] = idf if idf > 0 else IDF_FLOOR
    return out


def _scores(p: Postings, weights: dict[str, float], avgdl: float) -> Floats:
    scores = np.zeros(len(p.ids), dtype=np.float64)
    norm = K1 * (1 - B + B * p.lengths / avgdl)  # FTS5's order of operations, so scores match it
    for token, idf in weights.items():
        t = p.vocab.get(token)
        if t is None:
            continue
        docs = p.docs[p.offsets[t]:p.offsets[t + 1]]
        tf = p.tfs[p.offsets[t]:p.offsets[t + 1]].astype(np.float64)
        scores[docs] += idf * ((tf * (K1 + 1.0)) / (tf + norm[docs]))  # a token's positions are distinct
    return scores


def _best(p: Postings, scores: Floats, limit: int) -> list[Ranked]:
    """The best ``limit`` of one collection, ties at the cut decided by chunk id as the SQL ranking does."""
    held = np.flatnonzero(scores > 0)
    if len(held) > limit:
        cut = np.partition(-scores[held], limit - 1)[limit - 1]
        held = held[-scores[held] <= cut]
    order = held[np.lexsort((p.ids[held], -scores[held]))][:limit]
    return [Ranked(int(p.ids[i]), float(scores[i])) for i in order]


def top(sets: Sequence[Postings], tokens: Sequence[str], limit: int) -> list[Ranked]:
    """The ``limit`` best chunks of ``sets`` for ``tokens``, best first; equal scores in chunk id order.
    Only chunks holding at least one token are ranked."""
    total = sum(len(p.ids) for p in sets)
    if not total or limit <= 0:
        return []
    avgdl = float(sum(p.lengths.sum() for p in sets)) / total or 1.0
    weights = idfs(sets, tokens)
    hits = [hit for p in sets for hit in _best(p, _scores(p, weights, avgdl), limit)]
    hits.sort(key=lambda h: (-h.score, h.chunk_id))
    return hits[:limit]
