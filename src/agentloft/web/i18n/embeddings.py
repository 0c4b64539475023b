"""Strings of embedding models: their kind in Admin → Models and the knowledge search model in Settings."""

from __future__ import annotations

STRINGS: dict[str, dict[str, str]] = {
    "en": {
        "admin.models.kind": "Used for",
        "admin.models.kindChat": "Chat (agents and chats run on it)",
        "admin.models.kindEmbedding": "Embeddings (knowledge search)",
        "admin.models.kindHint": "An embedding model turns knowledge into vectors through /v1/embeddings; "
        "choose the one knowledge search uses in Settings.",
        "admin.models.kindFixed": "Chosen when the model was added.",
        "admin.models.embeddingBadge": "embeddings",
        "admin.models.testOkEmbedding": "OK · {ms} ms · {dimensions} dimensions",
        "admin.settings.embeddingModel": "Embedding model for knowledge search",
        "admin.settings.embeddingModelNone": "None: text search only",
        "admin.settings.embeddingModelHint": "With an embedding model, knowledge search adds vector similarity "
        "to text search. Choosing another one embeds every collection again in the background; meanwhile a "
        "passage without its new vector is found by text search only.",
    },
    "zh-CN": {
        "admin.models.kind": "用途",
        "admin.models.kindChat": "对话（智能体和对话使用）",
        "admin.models.kindEmbedding": "嵌入（知识库检索）",
        "admin.models.kindHint": "嵌入模型通过 /v1/embeddings 把知识转成向量；在“设置”中选择知识库检索所用的模型。",
        "admin.models.kindFixed": "添加模型时已确定。",
        "admin.models.embeddingBadge": "嵌入",
        "admin.models.testOkEmbedding": "成功 · {ms} 毫秒 · {dimensions} 维",
        "admin.settings.embeddingModel": "知识库检索所用的嵌入模型",
        "admin.settings.embeddingModelNone": "无：仅文本检索",
        "admin.settings.embeddingModelHint": "选择嵌入模型后，知识库检索会在文本检索之外加入向量相似度。"
        "换成另一个模型时，所有知识库会在后台重新嵌入；在此期间，还没有新向量的段落只能通过文本检索找到。",
    },
}
