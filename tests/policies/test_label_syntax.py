"""Label names, DNS subdomains, selector placeholders and the loader's first-line screen, tested with str
methods instead of patterns compiled at import (issue 23 row a): they answer as the patterns did.

Each pattern below is the one the module compiled before; the str methods must agree with it on every
text here: the characters at the edges of each class, non-ASCII letters that fold to ASCII ones ignoring
case (the Kelvin sign, dotted and dotless i, long s), and newlines, which `$` matches before.
"""

from __future__ import annotations

import itertools
import re

from fieldwarden.linter.loader import _nesting_depth_exceeds, deep_first_line
from fieldwarden.policies.rules._workload_selectors import has_placeholder, is_placeholder_text
from fieldwarden.policies.selectors import label_key_problems, label_value_problems

NAME = re.compile(r"(?:[A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]")
SUBDOMAIN = re.compile(r"[a-z0-9](?:[-a-z0-9]*[a-z0-9])?(?:\.[a-z0-9](?:[-a-z0-9]*[a-z0-9])?)*")
PLACEHOLDER = re.compile(
    r"^<[^<>]+>$|\$\{[^}]*\}|\{\{|^(?:change[-_]?me|replace[-_]?me|placeholder|todo)$", re.IGNORECASE
)
DEEP_FIRST = re.compile(r"[ \t\-?:]{200}")

# the characters at each class's edges, and some that fold to ASCII letters
ALPHABET = ["a", "z", "A", "Z", "0", "9", "-", "_", ".", "/", " ", "\n", "@", "é", "\u212a", "\u0130", "\u0131", "\u017f", "<", ">", "$", "{", "}"]
WORDS = ["app", "app.kubernetes.io", "my-app_1.2", "a", "-a", "a-", "a.", ".a", "a..b", "A.b", "a_b.c", "x" * 63,
         "ex-ample.com", "example.com.", "Example.com", "k8s.io/name", "a/b/c", "/name", "prefix/", "é", "ab\n"]
PLACEHOLDERS = ["<app>", "<app>\n", "<app>\n\n", "<>", "<<a>", "<a>>", "<a\nb>", " <a>", "<a> ", "${app}", "x${a}y",
                "${", "${a", "}${", "{{ .Values.app }}", "{{", "{ {", "CHANGEME", "change-me", "Change_Me", "changeme\n",
                "changeme\n\n", "changeme ", "replace-me", "REPLACEME", "replace--me", "placeholder", "Placeholder\n",
                "todo", "TODO", "todos", "to do", "\u212aeep", "todo\r", "me", ""]


def _texts() -> list[str]:
    short = ["".join(chars) for size in range(1, 4) for chars in itertools.product(ALPHABET, repeat=size)]
    return short + WORDS + PLACEHOLDERS + [f"{a}/{b}" for a in WORDS for b in WORDS[:6]]


def test_names_and_subdomains_as_the_patterns_say() -> None:
    for text in _texts():
        assert (label_value_problems(text) == []) == (text == "" or (len(text.encode()) <= 63 and bool(NAME.fullmatch(text)))), text
        prefix, _, name = text.rpartition("/")
        if text.count("/") <= 1:
            expected = bool(NAME.fullmatch(name)) and len(name.encode()) <= 63
            if "/" in text:
                expected = expected and bool(SUBDOMAIN.fullmatch(prefix)) and len(prefix.encode()) <= 253
            assert (label_key_problems(text) == []) == expected, text


def test_placeholders_as_the_pattern_says() -> None:
    found = 0
    for text in _texts():
        expected = PLACEHOLDER.search(text) is not None
        assert is_placeholder_text(text) == expected, repr(text)
        found += expected
    assert found > 50  # (both answers are seen)
    assert has_placeholder({"app": "${APP}"}) and has_placeholder(["<name>"]) and not has_placeholder({"app": "web"})


def test_the_first_line_screen_as_the_pattern_says() -> None:
    found = 0
    for head in ["", " ", "\t", "-", "?", ":", "x", "\n", "é"]:
        for size in (199, 200, 201):
            for fill in (" ", "- ", " \t-?:", "  x"):
                text = head + (fill * size)[:size] + "\nkey: value\n"
                expected = DEEP_FIRST.match(text) is not None
                # (the screen only sends a suspicious text to the exact count, which finds nothing deep here)
                assert _nesting_depth_exceeds(text, 256) is None
                assert deep_first_line(text) == expected, repr(text[:5])
                found += expected
    assert found
