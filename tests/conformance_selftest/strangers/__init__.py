"""Stranger pages: chat pages the kit was not written for, one module per case."""
