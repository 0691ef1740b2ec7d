"""What the tests share: clients, servers, stores, models and data, by what they are.

Test modules import their helpers from here and never from one another; ``tests/conftest.py``
holds the fixtures, and the hooks that check each test's tier, only (``tests/test_suite.py``).

adk_events      ADK events and their parts, made by hand
agui            the AG-UI rules every stream must keep, frames to send, a small client over /ws
approvals       the demo's approval story (R-1042)
audit           an audit record as the log writes one
auth            a jwt-mode gateway's settings and the requests that carry a credential
budgets         how long a test waits before it gives up, scaled to the machine
backends        the store's two backends, for its contract tests; a store seen from outside
browser         the reference web client in headless Chromium
cancels         a reply stopped mid-stream (the demo's, and a storyteller's)
damage          stored values a gateway cannot read back, planted in a database
flagship        the flagship story ("업무 요청 목록 화면 열어줘" -> MNU-3120)
official_client the official @ag-ui/client, run by node
ports           loopback ports, a range of its own for each xdist worker
postgres        a throwaway PostgreSQL server on loopback
processes       real ``agent-gateway`` processes, for tests that kill or race them
providers       local servers that speak OpenAI's and Gemini's wire formats
raw             a raw TCP client for slow, broken or hostile HTTP peers
schema_v1       a SQLite file as the store's first schema left it
servers         a gateway on loopback in the test's own process
speakers        a test model that plays a script of thoughts and text
state           agents that change state, and the state a client must end with
subagents       trees of agents that each speak a script
surfaces        A2UI: the demo's R-1042 card and a client's catalogs
tiers           unit, server, process, browser: what a test needs, checked
tokens          keys, tokens and a JWKS endpoint for the auth tests
tool_results    server tools whose results JSON text cannot carry
wire            one of each AG-UI event the gateway emits
"""

from pathlib import Path

# The repository's root: where the README, the scripts and the npm packages are.
ROOT = Path(__file__).resolve().parents[2]
