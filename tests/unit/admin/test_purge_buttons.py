"""The dashboard's purge buttons say hard or soft, so ``purge_mode`` never turns its hard
Purge button soft."""

from __future__ import annotations

import html
import json
import re

from stoker.admin.views.cache import PURGE_FORM, purge_buttons


def test_each_purge_button_sends_an_explicit_choice() -> None:
    bodies = [json.loads(html.unescape(body))
              for body in re.findall(r'data-body="([^"]*)"', str(purge_buttons("http://a/x")))]
    assert bodies == [{"urls": ["http://a/x"], "soft": False},
                      {"urls": ["http://a/x"], "soft": True}]


def test_the_purge_form_always_sends_its_soft_box() -> None:
    assert '<input type="checkbox" name="soft">' in PURGE_FORM  # sent checked or not
