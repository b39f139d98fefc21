"""The ``llm`` member engine: a chat model behind any OpenAI-compatible endpoint."""
