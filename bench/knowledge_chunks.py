"""Chunk sizes by measurement: recall@5 on longer documents built from the labelled passages, at a few
``knowledge.chunking`` targets, and what a top 5 then hands the model.

Each service of ``bench.knowledge_labels`` becomes one Markdown file: a heading with its name, then its
passages as paragraphs, each followed by a paragraph of neutral filler prose (``FILLER_SENTENCES``
sentences about nothing a question asks, in the passage's language), so that an answer sits inside a
document as it does in a handbook, and a larger chunk holds more text that is not the answer. The files
are cut by ``chunking.chunk`` at each target (the limit 1.6 × the target, as the product's 200 / 320),
and every question is asked of all the chunks of its language: lexical (``knowledge.postings``, common
tokens left out as the product does), vector (the fake embedding model's vectors, in-process) and hybrid
(reciprocal rank fusion of both, 20 deep). A hit is a top-5 chunk holding the passage whole. Reported per
target: chunks, mean tokens per chunk (``chunking.weight``), recall@5 of each method per language, and
the tokens a top 5 hands the model. Pure computation, no database: the rankings are the product's own
functions over the same chunks.

    python -m bench.knowledge_chunks [--targets 50,100,200,400,800] [--filler 3]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import cycle

import numpy as np
from tests.fakes.embeddings import vector

from agentloft.knowledge import chunking, postings, search, vectors
from agentloft.knowledge.fusion import Ranked, fuse
from agentloft.knowledge.terms import query_tokens, terms
from bench import knowledge_labels

DEPTH = 20
EN_FILLER = (
    "The team reviews this page every quarter and updates it when something changes.",
    "Questions about the wording of this handbook can be raised in the weekly meeting.",
    "Older versions of this text are kept in the history of the document.",
    "Each section was written by the people who run the service day to day.",
    "Links to related pages are collected at the end of the handbook.",
    "New joiners are encouraged to read the whole page during their first week.",
    "Feedback is welcome and usually answered within a few working days.",
    "Terms that appear in several sections are explained in the glossary.",
)
ZH_FILLER = (
    "本页内容每个季度复核一次，如有变化会及时修改。",
    "对文档措辞有疑问的同事可以在例会上提出。",
    "历史版本保存在文档的修改记录中，随时可以查看。",
    "各部分由日常维护相关工作的同事撰写。",
    "相关页面的链接汇总在手册的末尾。",
    "建议新同事在入职第一周通读全文。",
    "欢迎提出意见，通常会在几个工作日内答复。",
    "多处出现的术语在词汇表中有统一解释。",
)


@dataclass(frozen=True)
class Page:
    number: int | None
    text: str


@dataclass(frozen=True)
class Document:
    pages: tuple[Page, ...]


def documents(language: str, filler: int) -> list[Document]:
    """One Markdown file per service of the language (the module's doc)."""
    prose = cycle(EN_FILLER if language == "en" else ZH_FILLER)
    by_service: dict[str, list[str]] = {}
    for pid, text in knowledge_labels.passages():
        if pid.startswith(language):
            by_service.setdefault(pid.rsplit("-", 1)[0], []).append(text)
    out: list[Document] = []
    names = knowledge_labels.EN_NAMES if language == "en" else knowledge_labels.ZH_NAMES
    for name, passages in zip(names, by_service.values(), strict=True):
        joiner = " " if language == "en" else ""
        body = "\n\n".join(f"{p}\n\n{joiner.join(next(prose) for _ in range(filler))}" for p in passages)
        out.append(Document((Page(None, f"# {name}\n\n{body}"),)))
    return out


async def lexical(sets: Sequence[postings.Postings], q: str, limit: int) -> list[Ranked]:
    tokens = query_tokens(q)

    async def ranked(kept: Sequence[str]) -> list[Ranked]:
        return postings.top(sets, kept, limit)

    return await search.common_left_out(tokens, postings.shares(sets, tokens), ranked)


async def recall(language: str, target: int, filler: int,
                 budget: int | None) -> tuple[dict[str, float], list[str], int]:
    """Recall per method for the language's questions at the top k that fits ``budget`` tokens (at the
    top 5 for None), the chunks' texts, and that k."""
    chunks = [c.text for d in documents(language, filler)
              for c in chunking.chunk(d, target=target, limit=target * 8 // 5)]
    mean = statistics.mean(chunking.weight(c) for c in chunks)
    k = 5 if budget is None else max(1, min(DEPTH, round(budget / mean)))
    ids = list(range(1, len(chunks) + 1))
    index = postings.build(ids, [terms(t) for t in chunks])
    matrix = vectors.Matrix(ids=np.asarray(ids, dtype=np.int64), values=vectors.normalised([vector(t) for t in chunks]))
    found = {"lexical": 0, "vector": 0, "hybrid": 0}
    passages = dict(knowledge_labels.passages())
    asked = knowledge_labels.questions(language)
    for pid, q in asked:
        lex = await lexical([index], q, DEPTH)
        vec = vectors.top(matrix, vectors.normalised([vector(q)])[0], DEPTH)
        for name, ranking in (("lexical", lex), ("vector", vec), ("hybrid", fuse([lex, vec]))):
            found[name] += any(passages[pid] in chunks[r.chunk_id - 1] for r in ranking[:k])
    return {name: hits / len(asked) for name, hits in found.items()}, chunks, k


async def main_async(args: argparse.Namespace) -> None:
    print(f"chunk sizes: labelled passages in documents with {args.filler} filler sentence(s) after each; "
          f"recall@5, and recall at the top k that fits {args.budget} tokens")
    print("  target  language  chunks  tokens/chunk  top-5 tokens  recall@5 lex / vec / hybrid"
          "     k  recall@budget lex / vec / hybrid")
    for target in [int(x) for x in args.targets.split(",") if x]:
        for language in ("en", "zh"):
            five, chunks, _ = await recall(language, target, args.filler, None)
            by, _, k = await recall(language, target, args.filler, args.budget)
            mean = statistics.mean(chunking.weight(c) for c in chunks)
            print(f"  {target:6}  {language:8}  {len(chunks):6}  {mean:12.0f}  {5 * mean:12.0f}  "
                  f"{five['lexical']:.3f} / {five['vector']:.3f} / {five['hybrid']:.3f}  {k:6}  "
                  f"{by['lexical']:.3f} / {by['vector']:.3f} / {by['hybrid']:.3f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--targets", default="50,100,200,400,800")
    parser.add_argument("--filler", type=int, default=6, help="filler sentences after each passage")
    parser.add_argument("--budget", type=int, default=1000, help="tokens of chunks a model is handed")
    asyncio.run(main_async(parser.parse_args()))


if __name__ == "__main__":
    main()
