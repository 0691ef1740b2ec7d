"""ADK events in, AG-UI events and messages out, with no I/O: driven by tests as it is by runs.

    translator    one stateful translator per run: ADK events -> AG-UI events, in order
    streaming     a run's streamed messages, text and reasoning, one open at a time
    subagents     which agent of a tree is speaking, as SUBAGENT_* events
    attribution   which run of which agent made each event, marked on the event
    tool_results  a server tool's result as text, content parts, or a bounded preview
    history       a thread's stored events as AG-UI messages, with the ids streamed live

The store keeps each event's messages as ``history.event_messages`` makes them (the store is
given that function; it imports nothing from here), and the hub streams what the translator
makes.
"""
