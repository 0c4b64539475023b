"""Reciprocal rank fusion (``knowledge.fusion``): scores by rank only, ties, duplicates, empty rankings."""

from __future__ import annotations

import math

from agentloft.knowledge.fusion import RRF_K, Ranked, fuse


def _ranking(*ids: int) -> list[Ranked]:
    """A ranking whose scores mean nothing to fusion (only the order counts)."""
    return [Ranked(i, 1000.0 - n) for n, i in enumerate(ids)]


def test_a_chunk_both_rankings_hold_beats_one_only_at_the_top_of_one() -> None:
    fused = fuse([_ranking(1, 2, 3), _ranking(4, 2, 5)])
    assert [r.chunk_id for r in fused] == [2, 1, 4, 3, 5]
    assert math.isclose(fused[0].score, 2 / (RRF_K + 2))
    assert math.isclose(fused[1].score, 1 / (RRF_K + 1))


def test_scores_are_ignored_only_ranks_count() -> None:
    lexical = [Ranked(1, 99.0), Ranked(2, 0.01)]
    vector = [Ranked(2, 0.99), Ranked(1, 0.98)]
    fused = fuse([lexical, vector])
    assert math.isclose(fused[0].score, fused[1].score)  # 1/61 + 1/62 each
    assert [r.chunk_id for r in fused] == [1, 2]  # a tie keeps first appearance: the lexical ranking's order


def test_ties_keep_the_order_of_first_appearance() -> None:
    assert [r.chunk_id for r in fuse([_ranking(7, 8), _ranking(9, 10)])] == [7, 9, 8, 10]


def test_k_sets_how_much_the_top_rank_outweighs_the_rest() -> None:
    # chunk 2 is second in one ranking and fourth in the other: with k = 0 one first place beats that,
    # with k = 60 it does not
    rankings = [_ranking(1, 2), _ranking(3, 4, 5, 2)]
    assert fuse(rankings, k=0)[0].chunk_id == 1
    assert fuse(rankings)[0].chunk_id == 2


def test_a_chunk_listed_twice_in_one_ranking_counts_once_at_its_best_rank() -> None:
    fused = fuse([[Ranked(1, 1), Ranked(1, 0.5), Ranked(2, 0.1)]])
    assert [r.chunk_id for r in fused] == [1, 2]
    assert math.isclose(fused[0].score, 1 / (RRF_K + 1)) and math.isclose(fused[1].score, 1 / (RRF_K + 3))


def test_empty_rankings() -> None:
    assert fuse([]) == [] and fuse([[], []]) == []
    assert [r.chunk_id for r in fuse([_ranking(5, 6), []])] == [5, 6]
