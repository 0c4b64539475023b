"""Agents: an admin-configured prompt, model, limits and tools that users chat with."""
