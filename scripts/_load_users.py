"""The demo gateway with load users in its screen catalog, for ``scripts/load.py``.

Who may open which screen is the demo's
``gateway/examples/navigator/screens/data/users.json``; a user id not
listed there may open none, so its flagship story ends in "'업무 요청 목록'에 해당하는, 열 수
있는 화면을 찾지 못했습니다." with no navigateToScreen call. Load users need ids of their own
(the gateway rate-limits per user), so ``write_users`` puts the shipped screens and users
and the load users, each granted what ``demo`` is, in a directory, and running this module
serves the unchanged gateway over that directory. The shipped demo is untouched: only this
process knows the load users.

    python -m scripts._load_users DIRECTORY [gateway flags...]
"""

from __future__ import annotations

import functools
import json
import os
import sys
from collections.abc import Iterable
from pathlib import Path

from gateway import __main__ as gateway
from gateway.examples.navigator.screens import catalog

# The shipped user whose screens every load user gets.
TEMPLATE = "demo"


def write_users(directory: Path, users: Iterable[str]) -> None:
    """Writes the demo's screens and users, and ``users`` with demo's grants, to ``directory``."""
    shipped = json.loads((catalog.DATA_DIR / "users.json").read_text(encoding="utf-8"))
    template = next(user for user in shipped if user["userId"] == TEMPLATE)
    added = [{**template, "userId": user, "name": user} for user in users]
    text = json.dumps(shipped + added, ensure_ascii=False)
    (directory / "users.json").write_text(text, encoding="utf-8")
    (directory / "screens.json").symlink_to(catalog.DATA_DIR / "screens.json")


# Where the gateway's worker processes (GATEWAY_WORKERS), spawned with this module as
# their parent's main module, find the directory too.
DIRECTORY_VARIABLE = "GATEWAY_LOAD_USERS_DIRECTORY"


def use(directory: Path) -> None:
    # Every reader of the catalog calls catalog.load(); here it reads the given directory.
    catalog.load = functools.partial(catalog.load, directory)  # type: ignore[assignment]


def main() -> int:
    directory, flags = Path(sys.argv[1]), sys.argv[2:]
    os.environ[DIRECTORY_VARIABLE] = str(directory)
    use(directory)
    return gateway.main(flags)


if __name__ == "__main__":
    sys.exit(main())
elif __name__ == "__mp_main__" and (inherited := os.environ.get(DIRECTORY_VARIABLE)):
    use(Path(inherited))  # a worker process of the gateway main() serves
