"""The store's PostgreSQL backend: one database that several gateway processes write.

Every statement of SQL the store runs on PostgreSQL is in this package, as ``sqlite/``
holds SQLite's; the logic around it is ``gateway.store``'s and the same for both. What one
process owning a file gives SQLite for free holds here in SQL, for any number of writers:
a session's row is locked (``SELECT ... FOR UPDATE``) before its revision is checked and
an event appended, two processes opening one new thread are serialized by a lock on its
id, and a scope's state is merged under its row's lock, so no delta is lost.
"""
