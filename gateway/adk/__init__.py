"""The ADK side: everything that talks to google.adk, so the layers above speak of runs.

engine        one Runner over the hosted App and the session store: what the hub calls
hosting       what the gateway hosts (an agent or App) and the App the runner runs
loading       the agent a user names: ``module:attr``, a module, an adk-web folder
capabilities  GET /capabilities: AG-UI AgentCapabilities read from the agent tree
approvals     ADK tool confirmations as AG-UI interrupts, and the answers back
usage         ADK's usage_metadata as AG-UI TokenUsage, counted per run
thoughts      earlier turns' thoughts kept out of model requests
services      the memory, artifact and credential services each run has (GATEWAY_MEMORY...)
memory        each user's recent runs, recalled across their threads; fed at each run's end
artifacts     artifacts in this process, within a budget
stand_in      the agent the start-up warm-up meets instead of the hosted one
resumability  what a non-resumable App cannot do, refused when a run asks for it
telemetry     ADK's telemetry built only for spans that record, content off by default
private_reads ADK's pydantic private attributes read directly, not through __getattr__
chain         the gateway's plugins as one, each callback calling only those that have it
live          a live (voice) turn: Runner.run_live behind a LiveRequestQueue, transcript ids
live_approvals  a live turn's approvals, asked before ADK's gate (its live flow never asks)
"""
