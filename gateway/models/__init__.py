"""The models a hosted agent may run on, besides the one its author gave it.

    names      a model by name, for ``GATEWAY_MODEL``: Gemini, ``openai/<model>``, a script
    offline    the shell every offline model shares: a decision in, ADK chunks out
    script     a model that plays a script file (``GATEWAY_MODEL=script:<file>``)
    calls      each run's model calls, watched: stalls and failures
    failures   what a provider's failure means to the person waiting: a code and a sentence
    endpoints  where a hosted agent's models are, and how to ask each whether it answers
    connections  an ``openai/<model>``'s connection, kept from one model call to the next
    chat_completions  an ``openai/<model>``'s requests sent as ADK builds them, chunks read lean
    gemini     a ``gemini-*`` model's requests built from dicts, chunks validated once
    health     whether they answer, for ``/ping``

``ModelError`` is what a name or a script file that cannot be used raises, with a sentence.
"""

from __future__ import annotations

__all__ = ["ModelError"]


class ModelError(Exception):
    """The model name cannot be used; the message says what it needs."""
