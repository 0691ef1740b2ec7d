"""agent-gateway-chat's reading of what a person types: an address in any of the four
schemes becomes the /ws socket, anything else is a sentence, and JSON prints readably."""

from __future__ import annotations

import pytest

from gateway.cli.chat import readable, socket_url

pytestmark = pytest.mark.unit


@pytest.mark.parametrize(
    ("typed", "socket"),
    [
        ("http://127.0.0.1:8080", "ws://127.0.0.1:8080/ws"),
        ("http://127.0.0.1:8080/", "ws://127.0.0.1:8080/ws"),
        ("https://gw.example.com", "wss://gw.example.com/ws"),
        ("ws://h:1/ws?user=guest", "ws://h:1/ws?user=guest"),
        ("wss://h/agent/ws", "wss://h/agent/ws"),
    ],
)
def test_every_scheme_a_person_types_reaches_the_socket(typed: str, socket: str) -> None:
    assert socket_url(typed) == socket


@pytest.mark.parametrize("typed", ["127.0.0.1:8080", "ftp://h/ws", "http://", "localhost"])
def test_an_address_that_is_none_is_refused_in_words(typed: str) -> None:
    with pytest.raises(ValueError, match="is not a gateway address"):
        socket_url(typed)


def test_json_prints_as_a_person_wrote_it() -> None:
    assert readable('{"q": "\\uc5c5\\ubb34"}') == '{"q": "업무"}'
    assert readable("not json") == "not json"
