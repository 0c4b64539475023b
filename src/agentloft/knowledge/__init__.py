"""Knowledge collections: files a user gathers, cut into chunks and indexed so that people and agents
can search them (lexically, Chinese included; with vectors fused in when an embedding model is set)."""
