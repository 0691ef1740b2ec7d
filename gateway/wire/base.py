"""What every AG-UI frame is made of: the Struct options, ids and names, the version.

Ids and names a client sends reach logs, URLs and the store, so they are checked here once,
by type, for every frame that carries one; ``explained`` turns msgspec's regex complaint
into words a client can act on.
"""

from __future__ import annotations

import re
from typing import Annotated

import msgspec

PROTOCOL_VERSION = "1.0"


# Ids and names a client sends reach logs, URLs and the store: short and printable, and
# with no spaces around them (" t" and "t" must not name one thread). Stock clients send UUIDs.
MAX_ID_LENGTH = 256


PRINTABLE = r"^(?!\s)[^\x00-\x1f\x7f]+(?<!\s)$(?!\n)"


Id = Annotated[str, msgspec.Meta(min_length=1, max_length=MAX_ID_LENGTH, pattern=PRINTABLE)]


Name = Annotated[str, msgspec.Meta(min_length=1, max_length=128, pattern=PRINTABLE)]


# The same rule for the ids of resent messages, which only the trailing ones need to meet.
ID = re.compile(PRINTABLE)


# Entries of a RunAgentInput's lists: far more than any client declares or resends.
MAX_MESSAGES = 10_000


MAX_DECLARED = 256


class Wire(msgspec.Struct, rename="camel", omit_defaults=True, kw_only=True):
    """Common options: camelCase on the wire, absent optionals left out."""


ID_RULE = "with no control characters and no spaces around it"


def explained(error: msgspec.ValidationError) -> str:
    """msgspec's message, with the id pattern said in words."""
    return str(error).replace(f"matching regex {PRINTABLE!r}", ID_RULE)
