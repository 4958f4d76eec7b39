"""WARC/WET reader: record types, extraction, encodings and malformed input."""
from __future__ import annotations

import io

import pytest
from warcio.statusandheaders import StatusAndHeaders
from warcio.warcwriter import WARCWriter

from curation.document import DeadLetter, Document, Removal
from curation.readers.warc import markup_too_deep
from curation.readers import decode_html, extract_text, read_warc

PARAS = [
    "The city council approved a new plan on Monday that will change how the town collects and "
    "recycles its household waste over the next five years, officials said. The plan was the result "
    "of a long consultation with residents, who had asked for more frequent collection of recycling.",
    "Under the plan, every home will receive two new bins, and collection will move from weekly to "
    "every other week for general waste, while recycling will be collected each week. The council "
    "said that the change would save money and that it would also reduce the amount of waste that "
    "is sent to landfill each year.",
]
PAGE = (
    "<html><head><title>News</title></head><body><div class='nav'><a href='/'>Home</a> | "
    "<a href='/news'>News</a></div>"
    + "".join(f"<p>{p}</p>" for p in PARAS)
    + "<div class='footer'>Copyright 2020. All rights reserved.</div></body></html>"
)


def warc(records: list[tuple], gzip: bool = True) -> bytes:
    """records: (kind, uri, payload bytes, http content type or None, status)."""
    buf = io.BytesIO()
    writer = WARCWriter(buf, gzip=gzip)
    writer.write_record(writer.create_warcinfo_record("x.warc.gz", {"software": "test"}))
    for kind, uri, payload, ctype, status in records:
        if kind == "response" and ctype is not None:
            http = StatusAndHeaders(f"{status} OK", [("Content-Type", ctype)], protocol="HTTP/1.1")
            rec = writer.create_warc_record(uri, "response", payload=io.BytesIO(payload), http_headers=http)
        else:
            rec = writer.create_warc_record(
                uri, kind, payload=io.BytesIO(payload),
                warc_content_type="text/plain" if kind != "request" else "application/http; msgtype=request")
        writer.write_record(rec)
    return buf.getvalue()


def read(data: bytes, name: str = "/cc/CC-MAIN-x.warc.gz", **kw):
    return list(read_warc(io.BytesIO(data), name, "cc_2020_50", **kw))


def html_response(uri: str = "http://e.com/a", page: str = PAGE, ctype: str = "text/html; charset=utf-8"):
    return ("response", uri, page.encode("utf-8"), ctype, "200")


@pytest.mark.parametrize("gzip,extractor", [(True, "main_text"), (False, "main_text"), (True, "justext")])
def test_response_extracted_and_ids_count_all_records(gzip, extractor):
    data = warc([("request", "http://e.com/a", b"GET / HTTP/1.1\r\n\r\n", None, None),
                 html_response()], gzip=gzip)
    (doc,) = read(data, extractor=extractor)
    assert isinstance(doc, Document)
    assert doc.id == "cc_2020_50/CC-MAIN-x.warc.gz#2"  # warcinfo=0, request=1, response=2
    assert doc.url == "http://e.com/a" and doc.source == "cc_2020_50"
    assert doc.text == "\n\n".join(PARAS)  # nav and footer boilerplate removed
    assert doc.meta["http_status"] == "200"


def test_resiliparse_extractor():
    (doc,) = read(warc([html_response()]), extractor="resiliparse")
    assert PARAS[0] in doc.text and PARAS[1] in doc.text
    with pytest.raises(ValueError, match="setting 'extractor'"):
        read(warc([html_response()]), extractor="bs4")


def test_wet_conversion_records():
    data = warc([("conversion", "http://e.com/w", "Plain text from WET.\nSecond line.".encode(), None, None),
                 ("conversion", "http://e.com/empty", b"   ", None, None)])
    doc, empty = read(data, name="x.warc.wet.gz")
    assert doc.text == "Plain text from WET.\nSecond line." and doc.id == "cc_2020_50/x.warc.wet.gz#1"
    assert isinstance(empty, Removal) and empty.reason == "empty_after_extraction"


def test_policy_removals_and_non_http_dead_letter():
    data = warc([
        ("response", "http://e.com/pdf", b"%PDF-1.4 binary", "application/pdf", "200"),
        ("response", "http://e.com/404", b"<html>gone</html>", "text/html", "404"),
        ("response", "dns:e.com", b"1.2.3.4", None, None),  # not an HTTP message
        ("response", "http://e.com/nav", b"<html><body><a href='/'>Home</a></body></html>", "text/html", "200"),
        ("metadata", "http://e.com/a", b"fetchTimeMs: 12", None, None),
    ])
    pdf, missing, dns, empty = read(data)
    assert (pdf.reason, missing.reason, empty.reason) == (
        "non_html_payload", "http_status_not_ok", "empty_after_extraction")
    assert isinstance(dns, DeadLetter) and dns.error.startswith("non_http_response")
    assert dns.location == "/cc/CC-MAIN-x.warc.gz#3"


def test_truncated_record_is_dead_letter_after_good_records():
    data = warc([html_response("http://e.com/1"), html_response("http://e.com/2")], gzip=False)
    out = read(data[:-300], name="t.warc")
    assert isinstance(out[0], Document) and out[0].url == "http://e.com/1"
    assert isinstance(out[-1], DeadLetter) and out[-1].location == "t.warc#2"
    assert len(out) == 2


def test_truncated_gzip_member_is_dead_letter():
    data = warc([html_response("http://e.com/1"), html_response("http://e.com/2")])
    out = read(data[:-40])
    assert isinstance(out[0], Document)
    assert all(isinstance(r, DeadLetter) for r in out[1:]) and len(out) >= 2


def test_binary_garbage_is_one_dead_letter():
    out = read(bytes(range(256)) * 50, name="junk.warc")
    assert len(out) == 1 and isinstance(out[0], DeadLetter) and out[0].location == "junk.warc#0"


@pytest.mark.parametrize("extractor", ["main_text", "justext", "resiliparse"])
def test_deeply_nested_markup_does_not_crash(extractor):
    page = "<html><body>" + "<div>" * 100_000 + PARAS[0] + "</div>" * 100_000 + "</body></html>"
    data = warc([html_response(page=page), html_response("http://e.com/next")])
    out = read(data, extractor=extractor)
    assert len(out) == 2 and isinstance(out[1], Document)  # the next record is still read
    assert isinstance(out[0], Removal) and out[0].reason == "markup_too_deep"


def test_markup_depth_estimate():
    assert not markup_too_deep("<html><body>" + "<p>x<br><img src=a>" * 5000 + "</body></html>")
    assert not markup_too_deep("<div>" * 100 + "</div>" * 100)
    assert markup_too_deep("<div>" * 600)
    assert not markup_too_deep(("<div><span>x</span></div>" * 10_000).encode())


def test_too_large_payload_removed():
    (rec,) = read(warc([html_response()]), max_doc_bytes=100)
    assert isinstance(rec, Removal) and rec.reason == "too_large"


def test_charset_from_header_meta_and_detection():
    text = "Größe und Qualität"
    assert decode_html(text.encode("latin-1"), "text/html; charset=ISO-8859-1") == text
    meta_page = f'<html><head><meta charset="windows-1252"></head><body>{text}</body></html>'
    assert text in decode_html(meta_page.encode("cp1252"), "text/html")
    assert text in decode_html(f"<p>{text}</p>".encode("utf-8"), "text/html; charset=bogus-charset")


def test_latin1_page_decoded_through_reader():
    page = PAGE.replace("officials said", "officials said in Zürich")
    (doc,) = read(warc([html_response(page=page.encode("latin-1").decode("latin-1"),
                                      ctype="text/html; charset=ISO-8859-1")]))
    # html_response encodes as UTF-8; the header lies -> bytes_to_str keeps the text sane
    assert "officials said in Z" in doc.text


def test_extract_text_unknown_extractor():
    with pytest.raises(ValueError, match="setting 'extractor'"):
        extract_text("<p>x</p>", "trafilatura")
