"""The ADK side: everything that talks to google.adk, so the layers above speak of runs.

engine        one Runner over the hosted App and the session store: what the hub calls
hosting       what the gateway hosts (an agent or App) and the resumable App it becomes
loading       the agent a user names: ``module:attr``, a module, an adk-web folder
capabilities  GET /capabilities: AG-UI AgentCapabilities read from the agent tree
approvals     ADK tool confirmations as AG-UI interrupts, and the answers back
usage         ADK's usage_metadata as AG-UI TokenUsage, counted per run
thoughts      earlier turns' thoughts kept out of model requests
"""
