"""The image's HEALTHCHECK: exit 0 when the gateway in this container answers 200 on the path
given (``/livez`` by default), 1 with the reason otherwise.

A slim base has no curl, so this is the venv's Python and the standard library alone. It asks
the port the gateway listens on (``GATEWAY_PORT``) on loopback, unless ``GATEWAY_HOST`` names
one address, which it asks instead.
"""

from __future__ import annotations

import os
import sys
import urllib.request

ANY_ADDRESS = ("", "0.0.0.0", "::")


def main(argv: list[str]) -> int:
    path = argv[1] if len(argv) > 1 else "/livez"
    host = os.environ.get("GATEWAY_HOST", "")
    host = "127.0.0.1" if host in ANY_ADDRESS else host
    host = f"[{host}]" if ":" in host else host  # an IPv6 address, as a URL writes it
    url = f"http://{host}:{os.environ.get('GATEWAY_PORT', '8080')}{path}"
    try:
        with urllib.request.urlopen(url, timeout=4) as response:
            return 0 if response.status == 200 else 1
    except OSError as error:  # refused, timed out, or an HTTP error status
        print(f"healthcheck: {url}: {error}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
