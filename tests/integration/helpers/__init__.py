"""Helpers the integration tests share: played flows, recording set-up, the recovery, the
proxy's pass-through and OpenAI-style errors."""
