"""What the tests share: clients, servers, stores, models and data, by what they are.

agui        the AG-UI rules every stream must keep, and a small client over /ws
backends    the store's two backends, for its contract tests
damage      stored values a gateway cannot read back, planted in a database
postgres    a throwaway PostgreSQL server on loopback
processes   real ``agent-gateway`` processes, for tests that kill or race them
providers   local servers that speak OpenAI's and Gemini's wire formats
raw         a raw TCP client for slow, broken or hostile HTTP peers
speakers    a test model that plays a script of thoughts and text
tokens      keys, tokens and a JWKS endpoint for the auth tests
"""

from pathlib import Path

# The repository's root: where the README, the scripts and the npm packages are.
ROOT = Path(__file__).resolve().parents[2]
