"""Agent documents: memory an agent keeps across conversations and deliverables it writes for the user.

The service here is shared by the ``document`` tool type and the REST API, so the per-user isolation
rule lives in exactly one place."""
