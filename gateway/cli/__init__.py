"""The command-line tools beside the server: the operator commands and the terminal chat.

- ``operator``  what ``agent-gateway threads`` and ``agent-gateway export`` read: a user's
                threads (or the quarantined ones) and one thread as AG-UI messages, from
                the session store opened read-only, so they are safe beside a running
                gateway (``agent-gateway audit`` reads through ``gateway.audit.reading``)
- ``chat``      ``agent-gateway-chat``: a chat in the terminal over the /ws door that plays
                the browser, answering its client tools and approvals

The ``agent-gateway`` command itself (``serve``, and the command line that runs the operator
commands) is ``gateway.__main__``. Like it, this package is at the top of the house:
nothing in the gateway imports it.
"""
