"""Chat: sessions, messages, the engine every model call goes through, stream buffers, approvals."""
