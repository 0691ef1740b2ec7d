"""The store's SQLite backend: one file, one long-lived connection, one writing process.

Every statement of SQL the store runs is in this package; the logic around it (decoding,
what an event does to its run, crash recovery, the writer's queue) is in ``gateway.store``
and would serve another backend unchanged.
"""
