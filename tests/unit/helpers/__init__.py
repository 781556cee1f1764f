"""Helpers the unit tests share: fakes, files, the Open WebUI driver, a scaffolding driver."""
