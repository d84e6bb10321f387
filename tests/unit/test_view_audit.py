"""The Audit page, rendered from GET /api/audit's records: who, what, target, count and
outcome, the filter and the pager, escaping of what clients sent."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import stoker
from stoker.admin.views.audit import (
    ACTIONS,
    actor_html,
    audit_html,
    filter_form,
    outcome_html,
    pager_html,
    target_html,
)

NOW = 1_800_000_000.0


def record(id_: int, **overrides: Any) -> dict[str, Any]:
    return {"id": id_, "at": NOW - 90, "actor": "token:abc123", "action": "purge",
            "target": {"urls": [], "prefixes": [], "tags": ["product-42"], "all": False,
                       "soft": False}, "count": 3, "outcome": "ok", **overrides}


def test_a_record_reads_who_what_on_what_and_how_it_ended() -> None:
    out = audit_html([record(7), record(6, outcome="denied", actor="anonymous",
                                        action="POST /api/<x>", target={"status": 401},
                                        count=None)], NOW, "", False, None)
    assert "1 min ago" in out and 'token <code class="detail">abc123</code>' in out
    assert "tags: product-42</span>" in out and '<td class="num" data-label="Count">3</td>' in out
    assert '<span class="tag ok">ok</span>' in out and '<span class="tag failed">denied' in out
    assert "POST /api/&lt;x&gt;" in out and "<x>" not in out and "status: 401" in out
    assert out.index("tags: product-42") < out.index("status: 401")  # as given: newest first
    assert "Every record, newest first." in out and "Older" not in out


def test_a_target_leaves_empty_parts_out_and_keeps_all_of_it_in_its_tooltip() -> None:
    out = target_html({"tags": ["a", "b"], "urls": [], "soft": True, "nested": {"k": [1]},
                       "why": "<script>"})
    assert ">nested: {&quot;k&quot;:[1]} · soft: true · tags: a, b · why: &lt;script&gt;<" in out
    assert 'title="{&quot;nested&quot;' in out and "&quot;urls&quot;:[]" in out
    assert ">—<" in target_html({"urls": [], "all": False})


def test_actors_and_outcomes() -> None:
    assert actor_html("session:0123abcd") == 'session <code class="detail">0123abcd</code>'
    assert actor_html("anonymous") == "anonymous"
    assert actor_html("<b>:x") == '&lt;b&gt; <code class="detail">x</code>'
    assert 'class="tag running">busy' in outcome_html("busy")
    assert outcome_html("<odd>") == '<span class="tag ">&lt;odd&gt;</span>'


def test_the_filter_selects_a_known_action_or_keeps_the_free_text() -> None:
    known = filter_form("warm-credential")
    assert '<option value="warm-credential" selected>' in known and 'value=""' in known
    other = filter_form('POST /api/"x"')
    assert " selected" not in other and 'value="POST /api/&quot;x&quot;"' in other


def test_the_pager_links_older_records_after_the_last_shown_and_the_newest() -> None:
    out = pager_html([record(9), record(4)], "POST /api/warm", True, 12)
    assert 'href="/audit?action=POST+%2Fapi%2Fwarm&amp;before=4" rel="next">Older' in out
    assert 'href="/audit?action=POST+%2Fapi%2Fwarm">Newest' in out
    assert pager_html([record(1)], "", False, None) == ""
    assert "before=1" in pager_html([record(1)], "", True, None)


def test_the_filter_offers_every_action_stoker_records_by_name() -> None:
    """``ACTIONS`` is the list of the names the code records: a new one must join it."""
    source = Path(stoker.__file__).parent
    recorded = {name for path in source.rglob("*.py")
                for name in re.findall(r'\baction="([^"/][^"]*)"', path.read_text("utf-8"))}
    assert recorded == set(ACTIONS)
