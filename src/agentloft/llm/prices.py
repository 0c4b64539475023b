"""Default prices for a new model, from the ``genai-prices`` price list (the one pydantic-ai prices its
own spans with).

Decided where the issue is silent ("pydantic-ai's price data may fill defaults for known models"):
- only a model added without any price is filled, and only when adding it (``POST``): a price an admin
  typed, or a price cleared to null on purpose (an explicit ``null``), is never replaced, and an update
  never reprices a model behind the admin's back;
- the provider is found from the endpoint the model is called at (the provider's default endpoint when
  none is set), never guessed from the model's name alone: a ``llama3`` served by a local Ollama, vLLM
  or LM Studio is free to run and gets no price, though a hosted provider sells a model of that name;
- prices are the base tier (what 1,000 tokens cost), in USD per million tokens as the prices an admin
  sets are: a provider's long-context tier is not what most turns pay;
- a lookup that fails for any reason leaves the prices unknown (null), as before: the list is a
  convenience, never a reason to refuse a model.
"""

from __future__ import annotations

import logging

from genai_prices import Usage, calc_price

from agentloft.llm.presets import OPENAI_API

log = logging.getLogger(__name__)

ANTHROPIC_API = "https://api.anthropic.com"
_SAMPLE = 1000  # tokens priced: the base tier, scaled to a million


def _endpoint(provider: str, base_url: str | None) -> str:
    return base_url or (ANTHROPIC_API if provider == "anthropic" else f"{OPENAI_API}/v1")


def known_prices(*, provider: str, base_url: str | None, model: str) -> tuple[float, float] | None:
    """(input, output) USD per million tokens of ``model`` at that endpoint, or None when the list does
    not know the endpoint's provider or the model there."""
    endpoint = _endpoint(provider, base_url)
    try:
        per_input = calc_price(Usage(input_tokens=_SAMPLE), model, provider_api_url=endpoint)
        per_output = calc_price(Usage(output_tokens=_SAMPLE), model, provider_api_url=endpoint)
    except LookupError:  # an endpoint of no listed provider (self-hosted), or a model it does not list
        return None
    except Exception:  # the list is a convenience: a failure of its own leaves the prices unknown
        log.warning("could not look up the prices of %s at %s", model, endpoint, exc_info=True)
        return None
    scale = 1_000_000 / _SAMPLE
    return float(per_input.total_price) * scale, float(per_output.total_price) * scale
