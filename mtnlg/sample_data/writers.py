"""Writers for the real raw formats, all byte-deterministic.

- Pile: JSON lines compressed with zstd (one frame, fixed level: same input, same bytes).
- Common Crawl: WARC/1.0 via warcio, one gzip member per record (zlib's gzip header carries
  no mtime), deterministic record ids and dates.
- RealNews: JSON lines.  CC-Stories: one UTF-8 .txt per story.
"""
from __future__ import annotations

import io
import os
import random
import uuid
from datetime import datetime, timedelta

import zstandard
from warcio.statusandheaders import StatusAndHeaders
from warcio.warcwriter import WARCWriter

ZSTD_LEVEL = 3


def write_bytes(path: str, data: bytes) -> None:
    """Atomic write: a reader never sees a half-written file."""
    os.makedirs(os.path.dirname(path), exist_ok=True)
    tmp = path + ".tmp"
    with open(tmp, "wb") as f:
        f.write(data)
    os.replace(tmp, path)


def zstd_bytes(data: bytes) -> bytes:
    return zstandard.ZstdCompressor(level=ZSTD_LEVEL).compress(data)


def truncated_zstd(data: bytes) -> bytes:
    """A zstd frame cut in half: decoders fail before producing a complete line."""
    frame = zstd_bytes(data)
    return frame[: len(frame) // 2]


class WarcBuilder:
    """Builds one CC-style WARC file in memory: warcinfo, then request/response pairs."""

    def __init__(self, filename: str, snapshot: str, start: datetime, rng: random.Random) -> None:
        self.buf = io.BytesIO()
        self.writer = WARCWriter(self.buf, gzip=True, warc_version="WARC/1.0")
        self.filename = filename
        self.rng = rng
        self.clock = start
        self.records = 0
        self.warcinfo_id = self._id()
        info = (f"isPartOf: CC-MAIN-{snapshot[3:]}\r\npublisher: Sample Crawl (mtnlg sample corpus)\r\n"
                "format: WARC File Format 1.0\r\nconformsTo: http://bibnum.bnf.fr/WARC/WARC_ISO_28500_version1_latestdraft.pdf\r\n"
                "software: mtnlg-sample-data\r\nrobots: checked via crawler-commons\r\n"
                "operator: Common Crawl Admin (info@commoncrawl.org)\r\n").encode()
        rec = self.writer.create_warc_record(
            "", "warcinfo", payload=io.BytesIO(info), warc_content_type="application/warc-fields",
            warc_headers_dict={"WARC-Record-ID": self.warcinfo_id, "WARC-Date": self._date(),
                               "WARC-Filename": filename})
        self._write(rec)

    def _id(self) -> str:
        return f"<urn:uuid:{uuid.UUID(int=self.rng.getrandbits(128), version=4)}>"

    def _date(self) -> str:
        self.clock += timedelta(seconds=self.rng.randint(1, 30))
        return self.clock.strftime("%Y-%m-%dT%H:%M:%SZ")

    def _write(self, record) -> None:
        self.writer.write_record(record)
        self.records += 1

    def add_page(self, url: str, html: bytes, content_type: str, truncate: bool = False) -> int:
        """Append request + response; returns the response's 0-based record index.

        ``truncate`` cuts the response's gzip member in half (only for the file's last record).
        """
        date, resp_id, req_id = self._date(), self._id(), self._id()
        host = url.split("/")[2]
        path = "/" + url.split("/", 3)[3]
        req_headers = StatusAndHeaders(f"GET {path} HTTP/1.1", [
            ("User-Agent", "CCBot/2.0 (https://commoncrawl.org/faq/)"),
            ("Accept", "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8"),
            ("Host", host)], is_http_request=True)
        common = {"WARC-Date": date, "WARC-Warcinfo-ID": self.warcinfo_id,
                  "WARC-IP-Address": f"10.{self.rng.randint(0, 255)}.{self.rng.randint(0, 255)}.{self.rng.randint(1, 254)}"}
        req = self.writer.create_warc_record(
            url, "request", payload=io.BytesIO(b""), http_headers=req_headers,
            warc_headers_dict={"WARC-Record-ID": req_id, "WARC-Concurrent-To": resp_id, **common})
        self._write(req)
        resp_headers = StatusAndHeaders("200 OK", [
            ("Date", datetime.strptime(date, "%Y-%m-%dT%H:%M:%SZ").strftime("%a, %d %b %Y %H:%M:%S GMT")),
            ("Server", self.rng.choice(["nginx", "Apache/2.4.41 (Ubuntu)", "cloudflare"])),
            ("Content-Type", content_type), ("Content-Length", str(len(html))),
            ("Connection", "close")], protocol="HTTP/1.1")
        resp = self.writer.create_warc_record(
            url, "response", payload=io.BytesIO(html), http_headers=resp_headers,
            warc_headers_dict={"WARC-Record-ID": resp_id, **common})
        index = self.records
        if truncate:
            start = self.buf.tell()
            self._write(resp)
            member = self.buf.getvalue()[start:]
            self.buf.seek(start)
            self.buf.truncate()
            self.buf.write(member[: len(member) // 2])
        else:
            self._write(resp)
        return index

    def getvalue(self) -> bytes:
        return self.buf.getvalue()
