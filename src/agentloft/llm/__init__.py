"""Model providers: admin-managed model configurations and the pydantic-ai models built from them."""
