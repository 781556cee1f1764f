"""Playing a flow: which flow and step a request plays (routing, side calls, turns), and the
response planned for it (a fault, a stream template, an extractive answer).

Importing the package loads none of its modules.
"""
