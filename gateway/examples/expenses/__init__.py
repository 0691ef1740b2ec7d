"""An expenses assistant: one LlmAgent with a server tool, a browser tool and an approval.

``list_expenses`` runs on the server; ``showExpense`` is the browser's, declared in
``RunAgentInput.tools`` (``agent.BROWSER_TOOLS`` is what such a browser sends) and answered
with a tool message; ``submit_expense`` pauses the run for a person's approval when the
expense is over ``ledger.APPROVAL_LIMIT``, and runs at once below it. Its model, unless
``GATEWAY_MODEL`` names another, plays ``script.json`` offline.

    agent-gateway serve gateway.examples.expenses.agent
"""
