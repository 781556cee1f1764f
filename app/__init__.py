"""`python -m app` in a checkout: the notes chat, as `scaffold-guard app` serves it.

The notes chat lives in `scaffold_guard.app`; the wheel ships no top-level `app` (a name a
user's own project is likely to have). This folder is the checkout's short name for it, kept
so the README's first command stays `uv run python -m app`, and is not shipped.
"""
