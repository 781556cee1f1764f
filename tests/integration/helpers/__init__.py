"""Helpers the integration tests share: played flows, recording set-up, recovery, errors."""
