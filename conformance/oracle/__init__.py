"""The oracle: what the contract wants, what the mock and the logs say about a turn, and the
clauses' judgement of it.

`clauses.py` (the clauses, the contract's fixed strings and markers, the flows each is
judged on), `expected.py` (a flow's expected outcome, as the flow states it), `upstream.py`
(a turn's requests from the mock's journal, once settled, never from a partial journal),
`logs.py` (a log's lines after a turn's question) and `guard_log.py` (the guard proxy's
lines tied to a turn), `target.py` (the app under check) and `played.py` (a played flow),
`judge.py` and `turn_requests.py` (the assertions the clause tests make), `cases.py` (the
user's own cases) and `baseline.py` (known failures).
"""
