"""Agents written here the way other people write theirs: the AG-UI dojo's ADK examples and
ADK's own samples, re-made feature by feature (never copied), each in a module of its own
with a ``root_agent`` (or an ``app``) on the offline script model.

They are what "other people's agents, unchanged" is tested with: served by the gateway in
process and by ``agent-gateway serve tests.support.dojo.<module>:root_agent``, and beside
ag-ui-adk (``tests.support.agui_adk``) where the two should agree.
"""
