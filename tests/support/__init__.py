"""Helpers every test layer shares: ports, processes, servers, SSE, the journal, deadlines."""
