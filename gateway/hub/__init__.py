"""The run engine: threads and their runs, one active run per thread, across processes.

A door hands the ``Hub`` an input; the hub claims the thread, plans the run, drives ADK's
stream to the thread's watchers, and lets go. Each module holds one part, with its share
of the theory of operation:

    hub         the Hub: the doors' verbs (start, cancel, stop, reattach, earlier, leave),
                the threads in memory, claim and finish, the cluster's callbacks
    admission   an input refused at once, or admitted: acknowledged, then given its turn
    dedupe      an input sent twice runs once: a runId found admitted, running or stored
    expiry      browser calls nobody answers, answered by a timeout
    planning    an input and the stored thread made the message for ADK (``Planner``)
    driving     ADK's stream through the translator to the run's end (``Driver``)
    text_bursts a reply's chunks that keep coming, held and emitted as one event
    reattaching a client that comes back shown its thread, then its run live; a copy's
                sender too (``rejoin``)
    joining     a reattach replayed from the thread's log, or joined to a run elsewhere
    snapshots   what a reattach is shown of a thread the log cannot answer for
    refusals    what the hub refuses a caller, and the signals that make an input wait
    threads     a thread in memory (its watchers, what waits on it) and its one ``Run``
                (its events to the executor and the watchers, numbered)
    states      a thread's life as one table (``TRANSITIONS``)
    open_calls  what a thread waits on: the calls of its history with no response yet
    inputs      what an input brings: a new turn (or a press), browser results, approvals
    client_state  what an input's ``state`` writes to its thread (the user's edits)
    busy        what an input meets on a thread whose run is still going
    outbox      a run's deliveries in order, each held until its writes commit
    eventlog    every event of a thread numbered in its log; the replay after a cursor
    following   watchers of a thread another process runs, fed from its log
    takeover    dead holders' threads: their cut-off runs closed, ended in the log, gone on with
    limits      rate limits, quotas, and the cap on runs in progress
    listing     the thread door's verbs: a user's threads listed, read, changed, deleted
    thread_news a user's connections told of changes to their threads, folded, batched
    thread_export  one thread as a JSON or Markdown file
    titles      a thread titled by the agent's model after its first reply (optional)
"""
