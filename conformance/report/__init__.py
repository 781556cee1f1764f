"""The report: what a run found, for people.

`markdown.py` (the clause-by-result table, `--conformance-report FILE.md`, and the writing
of both files), `html_page.py` (FILE.html: the table and each failure's evidence, as one
self-contained page) and `evidence.py` (what a failing test leaves in its folder).
"""
