"""The journal: what the mock received and how each response ended, its queries, and the
wait for a turn to settle.

Importing the package loads none of its modules.
"""
