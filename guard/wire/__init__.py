"""The APIs the guard speaks, pure: each reply guard (chat completions, the Responses API,
Anthropic's Messages, Ollama's chat and generate), each API as a value (`apis.py`), the
rounds that adapt a stream guard to the flow (`rounds.py`), and the faults and error shapes
every route and transport answers with. No I/O: the proxy (`guard.http`) and the in-process
transports (`guard.transport`) adapt it."""
