"""The HTTP edge of the app: routes that adapt the turn pipeline to SSE and JSON."""
