"""contract.text.visible: what a terminal shows of a string from the traffic."""

from __future__ import annotations

from contract.text import visible


def test_controls_and_invisible_characters_become_escapes() -> None:
    assert visible("a\x1b[31mb\x07c\x00\x7f\x85") == "a\\x1b[31mb\\x07c\\x00\\x7f\\x85"
    assert visible("x\u202ey\u200bz\ufeff\u2066") == "x\\u202ey\\u200bz\\ufeff\\u2066"
    assert visible("tab\there\nnew") == "tab\\x09here\\x0anew"


def test_everything_else_is_left_as_it_is() -> None:
    text = "orders-é€😀 [bold]x[/] \\ \" ' < > &"
    assert visible(text) == text
    assert visible("") == ""
