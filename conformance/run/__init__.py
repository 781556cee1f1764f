"""The run: the target the kit checks, proved ready, and each flow played once.

`reference.py` (no target given: the mock and the reference app, in-process on free
ports), `preflight.py` (reachable, wired to this mock, every declared part on the page),
`questions.py` (the question that plays a flow, under a fresh KEY) and `plays.py` (each
flow played once per worker, kept for every clause judged on it).
"""
