"""Tool types (code) and tools (database rows): the registry, the wrapper every tool passes through,
the admin API, and the built-in types under ``tools/types``."""
