"""plural: a count and its noun, agreed."""

from __future__ import annotations

import pytest

from stoker.text import plural


@pytest.mark.parametrize(("count", "noun", "many", "said"), [
    (0, "URL", None, "0 URLs"), (1, "URL", None, "1 URL"), (2, "URL", None, "2 URLs"),
    (1, "entry", "entries", "1 entry"), (5, "entry", "entries", "5 entries"),
])
def test_plural_agrees_the_noun_with_the_count(count: int, noun: str, many: str | None,
                                               said: str) -> None:
    assert plural(count, noun, many) == said


def test_plural_writes_the_figure_with_the_given_formatter() -> None:
    assert plural(12345, "URL", figure="{:,}".format) == "12,345 URLs"
    assert plural(1, "URL", figure=lambda n: f"#{n}") == "#1 URL"
