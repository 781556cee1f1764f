"""Flows: the model (flows, steps, faults, expectations), the flow-file parser and writer,
the built-in catalog, the trigger grammar, and how a step is cut into chunks and paced.

Importing the package loads none of its modules.
"""
