"""The mock's HTTP server: the app and its routes, and serving it (on a port or in-process).

Importing the package loads none of its modules.
"""
