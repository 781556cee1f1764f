"""Helpers the unit tests share: fakes, files, canned chunks and drivers."""
