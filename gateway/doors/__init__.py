"""The doors: the ASGI app, and every way a client comes in, over the hub.

A door decodes what comes up, hands it to the hub and encodes what goes down; it knows
addresses, credentials and sockets, so the hub never does. Each door is given one bundle
(``shared.Shared``: hub, settings, authenticator, rate limiter, allowed origins), never
the app, so no door imports ``app``. The parts (each module's docstring has its theory):

- ``app``          the ASGI app (``Gateway``): lifespan, warm-up and model probes, routing
- ``shared``       what every door is given, built once the hub is up
- ``websocket``    /ws: runs, answers, cancels and reattaches both ways on one connection
- ``sse``          POST /invocations: one RunAgentInput in, its run out as SSE
- ``sse_replay``   GET /invocations: a thread's SSE stream resumed by ``Last-Event-ID``
- ``ping``         GET /ping and /ready: Starting, Healthy, HealthyBusy, Unhealthy, Draining
- ``drain``        SIGTERM: no new runs, those in progress finish, then /ws closes with 1012
- ``json_doors``   GET /tools, /me, /capabilities, /history; POST /ws-ticket
- ``tool_results`` POST /tool-results: a backend system's final result for a long-running call
- ``access``       around every door's work: identify the caller, log, audit
- ``cors``         which browser origins may come in, and CORS on the HTTP doors
- ``body``         a request body read within bounds of size and time
- ``send_queue``   a connection's events on their way out: encoded, bounded, batched
- ``asgi``         the ASGI types, HTTP answers and refusals the doors share
- ``static``       the web page: the gateway's chat page, under the hosted app's files
- ``transport``    uvicorn's protocols with the limits uvicorn lacks
- ``warmup``       start-up runs through the server's own /ws before /ping says Healthy
"""
