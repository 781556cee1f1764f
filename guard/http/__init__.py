"""The guard proxy's HTTP side: the ASGI app (`server.create_app`), the upstream pool and the
I/O of the flow every route follows (`upstream.GuardedCall`), and each API's route, a few
lines each (its API value from `guard.wire.apis`, its error shape, its keep-alive)."""
