"""Model presets for the admin's model form: they fill the base URL and say which fields matter.

The model names are suggestions shown as placeholders; providers rename models often, so the admin
always types or confirms the name. ``embedding_hint`` names an embedding model the provider serves through
``/v1/embeddings``; Anthropic and DeepSeek have no such endpoint, so the form offers them only for chat.
``vision`` is what the form ticks for a preset (the suggested models read images: OpenAI's,
Anthropic's, OpenRouter's gpt-4o-mini); the admin changes it for the model chosen.

vLLM's own default port is 8000, which is agentloft's too (``AGENTLOFT_PORT``): on one machine they cannot
both have it, and a preset pointing at 8000 would test agentloft against itself (a 404 from our own API).
The preset therefore says 8001 and the setup page tells how to start vLLM there (``--port 8001``).
"""

from __future__ import annotations

from agentloft.llm.schemas import ModelPreset

PRESETS: tuple[ModelPreset, ...] = (
    ModelPreset(id="openai", label="OpenAI", provider="openai", base_url="https://api.openai.com/v1",
                needs_api_key=True, model_hint="gpt-4o-mini", embedding_hint="text-embedding-3-small",
                vision=True),
    ModelPreset(id="anthropic", label="Anthropic", provider="anthropic", base_url=None,
                needs_api_key=True, model_hint="claude-sonnet-4-5", vision=True),
    ModelPreset(id="ollama", label="Ollama", provider="openai", base_url="http://127.0.0.1:11434/v1",
                needs_api_key=False, model_hint="llama3.2", embedding_hint="nomic-embed-text"),
    ModelPreset(id="vllm", label="vLLM", provider="openai", base_url="http://127.0.0.1:8001/v1",
                needs_api_key=False, model_hint="meta-llama/Llama-3.1-8B-Instruct",
                embedding_hint="BAAI/bge-m3"),
    ModelPreset(id="lmstudio", label="LM Studio", provider="openai", base_url="http://127.0.0.1:1234/v1",
                needs_api_key=False, model_hint="qwen2.5-7b-instruct",
                embedding_hint="text-embedding-nomic-embed-text-v1.5"),
    ModelPreset(id="openrouter", label="OpenRouter", provider="openai", base_url="https://openrouter.ai/api/v1",
                needs_api_key=True, model_hint="openai/gpt-4o-mini",
                embedding_hint="openai/text-embedding-3-small", vision=True),
    ModelPreset(id="deepseek", label="DeepSeek", provider="openai", base_url="https://api.deepseek.com/v1",
                needs_api_key=True, model_hint="deepseek-chat"),
)

# Any other server that speaks the OpenAI API (llama.cpp, LocalAI, a company gateway…): the admin types
# its base URL, and a key only if that server wants one. Admin → Models has the same choice as its blank
# "Custom" option (which also lets the provider be picked), so the API's preset list leaves this one out.
CUSTOM_PRESET = ModelPreset(id="custom", label="Custom (OpenAI-compatible)", provider="openai", base_url=None,
                            needs_api_key=False, offers_api_key=True, model_hint="my-model",
                            embedding_hint="my-embedding-model")

SETUP_PRESETS: tuple[ModelPreset, ...] = (*PRESETS, CUSTOM_PRESET)

OPENAI_API = "https://api.openai.com"


def default_vision(kind: str, provider: str, base_url: str | None) -> bool:
    """Whether a new model row reads images when the admin does not say: an embedding model never;
    Anthropic's chat models and OpenAI's own API (its gpt-4o-class models) do; another OpenAI-compatible
    server (Ollama, vLLM, LM Studio, a custom one) serves whatever model was loaded there, most of which
    read text only. Migration 0024_model_vision applies the same rule to existing rows."""
    if kind != "chat":
        return False
    return provider == "anthropic" or (provider == "openai" and (base_url is None or base_url.startswith(OPENAI_API)))
