"""The OpenAI-compatible API: every agent a user may use is a model of ``/v1`` for OpenAI clients."""
