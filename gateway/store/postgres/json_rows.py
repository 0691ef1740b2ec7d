"""Many rows of one statement as one JSON parameter, made by one call of msgspec.

A statement of several writes (a batch's frames, its streamed texts, its trims) took
each column as an array parameter. psycopg dumps a list in Python, an element at a time:
it looks for the elements' type at every execution (``ListDumper.get_key``), then dumps
and quotes each element. On a cluster that was ~17% of the writer thread's samples, and
the arrays' parameters ~29% (session 45). Here the rows go as one JSON document (a
``msgspec.Struct`` a row, whose fields are the columns), encoded in C in one call, and
the statement reads them back with ``json_to_recordset``, naming each column's type:
psycopg dumps one text.

PostgreSQL's text cannot hold a NUL (``connection._Text`` replaces it in a text
parameter), and ``json_to_recordset`` refuses a ``\\u0000`` in a text column: the rows of
a document that holds one are made again with each NUL replaced by U+FFFD, as a text
parameter's would be. Bytes go as base64 (msgspec's), read back with ``decode(..., 'base64')``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import msgspec

_encode = msgspec.json.Encoder().encode
# How a NUL is written in a JSON string; a backslash before it (``\\u0000``, written by a
# text that holds a backslash and "u0000") only makes the rows go the longer way.
_NUL = b"\\u0000"


class Row(msgspec.Struct, omit_defaults=True):
    """A row of a statement's rows; a field left at its default (None) is the column's
    NULL, and is left out of the document."""


def document(values: Sequence[object]) -> str:
    """Rows as one JSON document, for ``%s::json``: ``Row``s, read by
    ``json_to_recordset``; tuples, each a JSON array (``->>`` its place); or texts, read
    by ``json_array_elements_text``."""
    encoded = _encode(values)
    if _NUL in encoded:
        encoded = _encode(_without_nul(msgspec.json.decode(encoded)))
    return encoded.decode()


def _without_nul(value: Any) -> Any:
    if isinstance(value, str):
        return value.replace("\x00", "\ufffd")
    if isinstance(value, list):
        return [_without_nul(each) for each in value]
    if isinstance(value, dict):
        return {key: _without_nul(each) for key, each in value.items()}
    return value
