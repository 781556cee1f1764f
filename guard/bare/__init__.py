"""The guard proxy a bare install serves: asyncio and h11 in front of the in-process
transport (server.py)."""
