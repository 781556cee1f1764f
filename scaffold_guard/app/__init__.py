"""The reference notes chat app that implements the scaffold guardrail."""
