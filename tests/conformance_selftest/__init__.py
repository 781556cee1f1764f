"""Self-tests of the conformance kit: deliberately broken chat apps it must catch."""
