"""Example applications the wheel ships: each hosts an ADK agent through the gateway's public
API only (``gateway.adk.hosting``, ``gateway.tools``, ``gateway.context``, ``gateway.models``)."""
