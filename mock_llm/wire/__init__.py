"""Wire formats: each API's request parsing and response encoding (OpenAI chat completions,
Ollama, the Responses API, Anthropic's Messages API, Gemini).

Importing the package loads none of its modules.
"""
