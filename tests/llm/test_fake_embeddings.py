"""The fake model server's ``/v1/embeddings``: deterministic unit vectors, near for texts that share words
(or, in Chinese, characters and pairs of them), so that retrieval tests measure something."""

from __future__ import annotations

import math

import httpx

from tests.fakes.openai_server import FakeModel, FakeModelServer


def test_the_fake_server_gives_near_vectors_to_similar_texts(fake_model_server: FakeModelServer,
                                                              fake_model: FakeModel) -> None:
    texts = ["Indexing files in the background", "index a file in the background job",
             "The cat sat on the mat", "知识库检索", "知识库的检索方法"]
    body = httpx.post(f"{fake_model_server.base_url}/embeddings", json={"model": "m", "input": texts}).json()
    vectors = [d["embedding"] for d in sorted(body["data"], key=lambda d: d["index"])]
    again = httpx.post(f"{fake_model_server.base_url}/embeddings", json={"model": "m", "input": texts[0]}).json()
    assert again["data"][0]["embedding"] == vectors[0]  # deterministic

    def cos(a: list[float], b: list[float]) -> float:
        return sum(x * y for x, y in zip(a, b, strict=True))

    assert all(math.isclose(cos(v, v), 1.0) for v in vectors)
    assert cos(vectors[0], vectors[1]) > cos(vectors[0], vectors[2]) + 0.2
    assert cos(vectors[3], vectors[4]) > max(cos(vectors[3], vectors[0]), cos(vectors[3], vectors[2])) + 0.3
