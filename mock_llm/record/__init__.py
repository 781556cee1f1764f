"""Recording: the proxy that records a real upstream's answers as flow steps (per API), with
redaction and content decoding.

Importing the package loads none of its modules.
"""
