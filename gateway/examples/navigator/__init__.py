"""The bundled demo: a screen navigator for a business web application.

"업무 요청 목록 화면 열어줘" → ``find_screen`` (a ranked search over the screens the user may
open) → ``navigateToScreen`` MNU-3120, which the browser performs, and a reply that tells the
truth about what the browser did. Its parts: the screen catalog and search (``screens``), the
navigation policy (``policy``), the work-request approval (``work_requests``), the tool
catalog (``tools/*.json``), an offline scripted model (``scripted``) and the portal around
the gateway's chat page (``web/``, laid over ``gateway/web/``). ``agent.hosted`` puts them
together for the gateway; the gateway's core imports none of it.
"""
