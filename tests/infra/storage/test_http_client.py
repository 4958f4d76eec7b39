"""The HTTP client's retry, backoff, resume and cap logic, with no Beam pipeline and no network:
a scripted opener stands in for urllib3 (each request takes the next action of a script), and
sleeping is recorded instead of done."""
from __future__ import annotations

import io
import threading

import pytest
import urllib3
from urllib3 import HTTPHeaderDict

from infra.storage.http_client import (Client, FileInfo, HttpError, backoff_delay,
                                           retry_after_seconds)
from infra.storage.http_settings import HttpSettings
from infra.storage.http_stream import FIRST_BLOCK, RangeReader, open_stream

URL = "https://files.test/crawl/a.warc.gz"
DATA = bytes((i * 7 + i // 251) % 256 for i in range(700_000))


class FakeResponse:
    def __init__(self, status, headers=None, body=b"", cut_after=None, reason=""):
        self.status, self.reason = status, reason
        self.headers = HTTPHeaderDict(headers or {})
        self._body, self._cut = body, cut_after
        self.released = self.closed = False

    def stream(self, amt=65536, decode_content=None):
        end = len(self._body) if self._cut is None else self._cut
        for i in range(0, end, 1000):
            yield self._body[i:min(i + 1000, end)]
        if self._cut is not None:
            raise urllib3.exceptions.ProtocolError("Connection broken: IncompleteRead")

    def release_conn(self):
        self.released = True

    def drain_conn(self):
        pass

    def close(self):
        self.closed = True


class Server:
    """A scripted server of ``data``: ``script`` holds one action per request ("ok", a status,
    "cut:N", "ignore-range", "etag:X", "raise", "redirect"); once it is used up, "ok"."""

    def __init__(self, data=DATA, script=(), etag='"v1"'):
        self.data, self.script, self.etag = data, list(script), etag
        self.requests: list[tuple[str, str, dict]] = []
        self.lock = threading.Lock()

    def __call__(self, method, url, headers):
        with self.lock:
            self.requests.append((method, url, dict(headers)))
            action = self.script.pop(0) if self.script else "ok"
        if action == "raise":
            raise urllib3.exceptions.NewConnectionError(None, "Connection refused")
        if action == "cert":
            raise urllib3.exceptions.SSLError("[SSL: CERTIFICATE_VERIFY_FAILED] certificate verify failed")
        if action == "redirect":
            return FakeResponse(302, {"Location": "/moved/a.warc.gz"})
        if isinstance(action, int):
            return FakeResponse(action, {"Retry-After": "3"} if action in (429, 503) else {})
        etag = action.split(":", 1)[1] if action.startswith("etag:") else self.etag
        size = len(self.data)
        if method == "HEAD":
            return FakeResponse(200, {"Content-Length": str(size), "ETag": etag})
        rng = headers.get("Range", "")
        a, _, b = rng[len("bytes="):].partition("-")
        start, end = int(a or 0), min(size, int(b) + 1 if b else size)
        if action == "ignore-range" or not rng:
            return FakeResponse(200, {"Content-Length": str(size), "ETag": etag}, self.data)
        if start >= size:
            return FakeResponse(416, {"Content-Range": f"bytes */{size}"})
        cut = int(action.split(":")[1]) if action.startswith("cut:") else None
        return FakeResponse(206, {"Content-Range": f"bytes {start}-{end - 1}/{size}",
                                  "Content-Length": str(end - start), "ETag": etag},
                            self.data[start:end], cut_after=cut)

    def ranges(self):
        return [h.get("Range") for m, _, h in self.requests if m == "GET"]


def client(server, **settings):
    sleeps = []
    c = Client(HttpSettings(**{"backoff_initial": 1.0, "backoff_max": 8.0, **settings}),
               opener=server, sleep=sleeps.append, rand=lambda: 0.5)
    return c, sleeps


def test_backoff_is_full_jitter_over_a_doubling_cap_and_honours_retry_after():
    s = HttpSettings(backoff_initial=1.0, backoff_max=10.0)
    assert [backoff_delay(s, n, rand=lambda: 1.0) for n in range(1, 7)] == [1, 2, 4, 8, 10, 10]
    assert [backoff_delay(s, n, rand=lambda: 0.25) for n in (1, 3)] == [0.25, 1.0]
    assert backoff_delay(s, 1, retry_after=5, rand=lambda: 0.0) == 5  # the server's word, ...
    assert backoff_delay(s, 1, retry_after=500, rand=lambda: 0.0) == 10  # ... capped
    assert backoff_delay(HttpSettings(backoff_initial=0, backoff_max=0), 5, retry_after=3) == 0


def test_retry_after_reads_seconds_and_http_dates():
    assert retry_after_seconds("120") == 120
    assert retry_after_seconds("Wed, 21 Oct 2015 07:28:10 GMT", now=1445412480) == 10
    assert retry_after_seconds("soon") is None and retry_after_seconds(None) is None


def test_throttled_requests_are_retried_after_jittered_waits():
    server = Server(script=[503, 429, "raise"])
    c, sleeps = client(server)
    data, info = c.read_range(URL, 1000, 5000)
    assert data == DATA[1000:5000] and info.size == len(DATA) and info.etag == '"v1"'
    # waits: rand 0.5 of caps 1, 2, 4, at least Retry-After (3 s) for the 503 and the 429
    assert sleeps == [3.0, 3.0, 2.0]
    assert server.ranges() == ["bytes=1000-4999"] * 4
    assert c.transfers.retries == 3


def test_retries_are_bounded_and_the_error_names_the_status():
    server = Server(script=[503] * 10)
    c, sleeps = client(server, retries=3)
    with pytest.raises(HttpError) as e:
        c.read_range(URL, 0, 100)
    assert e.value.status == 503 and e.value.tries == 4 and len(sleeps) == 3
    assert "HTTP 503 after 4 tries (http.retries: 3)" in str(e.value)
    assert len(server.requests) == 4


def test_a_cut_body_resumes_at_the_byte_where_it_stopped():
    server = Server(script=["cut:3500", "cut:1000"])
    c, sleeps = client(server, retries=0)  # resuming is not a failure: no retry needed
    data, _ = c.read_range(URL, 10_000, 20_000)
    assert data == DATA[10_000:20_000]
    assert server.ranges() == ["bytes=10000-19999", "bytes=13500-19999", "bytes=14500-19999"]
    assert sleeps == [] and c.transfers.resumed == 2


def test_cuts_that_deliver_nothing_count_as_failures():
    server = Server(script=["cut:0", "cut:0", "cut:0"])
    c, _ = client(server, retries=2)
    with pytest.raises(HttpError) as e:
        c.read_range(URL, 0, 100)
    assert e.value.status is None and "ProtocolError" in str(e.value)


def test_permanent_answers_fail_at_once():
    for status in (404, 403, 400):
        c, sleeps = client(Server(script=[status]))
        with pytest.raises(HttpError) as e:
            c.read_range(URL, 0, 10)
        assert e.value.status == status and e.value.tries == 1 and sleeps == []


def test_an_untrusted_certificate_fails_at_once_and_names_the_setting():
    c, sleeps = client(Server(script=["cert"]))
    with pytest.raises(HttpError, match="http.ca_bundle"):
        c.read_range(URL, 0, 10)
    assert sleeps == []


def test_a_server_that_ignores_range_is_refused_except_from_byte_0():
    c, _ = client(Server(script=["ignore-range"]))
    assert c.read_range(URL, 0, 50)[0] == DATA[:50]
    c, _ = client(Server(script=["ignore-range"]))
    with pytest.raises(HttpError, match="ignores Range"):
        c.read_range(URL, 10, 50)


def test_a_file_that_changes_between_requests_fails():
    server = Server(script=["ok", "etag:\"v2\""])
    c, _ = client(server)
    _, info = c.read_range(URL, 0, 10)
    with pytest.raises(HttpError, match="changed while it was read"):
        c.read_range(URL, 10, 20, info)


def test_redirects_are_followed_with_the_range():
    server = Server(script=["redirect"])
    c, _ = client(server)
    assert c.read_range(URL, 5, 15)[0] == DATA[5:15]
    assert server.requests[1][1] == "https://files.test/moved/a.warc.gz"
    assert server.requests[1][2]["Range"] == "bytes=5-14"


def test_past_the_end_reads_nothing_and_learns_the_size():
    c, _ = client(Server())
    data, info = c.read_range(URL, len(DATA) + 5, len(DATA) + 50)
    assert data == b"" and info.size == len(DATA)
    data, _ = c.read_range(URL, len(DATA) - 3, len(DATA) + 50)
    assert data == DATA[-3:]


def test_head_falls_back_to_the_first_byte_where_head_is_refused():
    c, _ = client(Server(script=[405]))
    assert c.head(URL).size == len(DATA)
    c, _ = client(Server(script=[404]))
    with pytest.raises(HttpError) as e:
        c.head(URL)
    assert e.value.status == 404


def test_requests_in_flight_per_host_are_capped():
    cap, threads = 2, 6
    state = {"now": 0, "max": 0}
    cond, release = threading.Condition(), threading.Event()
    inner = Server()

    def opener(method, url, headers):
        with cond:
            state["now"] += 1
            state["max"] = max(state["max"], state["now"])
            cond.notify_all()
        release.wait()
        with cond:
            state["now"] -= 1
        return inner(method, url, headers)

    c = Client(HttpSettings(max_connections_per_host=cap), opener=opener)
    other = Client(HttpSettings(max_connections_per_host=cap), opener=inner)
    workers = [threading.Thread(target=c.read_range, args=(URL, i * 10, i * 10 + 10))
               for i in range(threads)]
    for w in workers:
        w.start()
    with cond:
        assert cond.wait_for(lambda: state["now"] == cap, timeout=30)
    # another host is not held up by this one's slots
    assert other.read_range("https://elsewhere.test/x", 0, 5)[0] == DATA[:5]
    for w in workers:
        w.join(timeout=0.05)
    assert state["now"] == cap  # the other requests wait for a slot
    release.set()
    for w in workers:
        w.join(timeout=30)
    assert state["max"] == cap and not any(w.is_alive() for w in workers)


def test_stream_reads_seeks_and_grows_its_blocks():
    server = Server()
    c, _ = client(server, block_bytes=256 * 1024)
    f = open_stream(c, URL, buffer_size=4096)
    assert server.requests == []  # nothing until the first read
    assert f.read() == DATA
    starts = [int(r[6:].split("-")[0]) for r in server.ranges()]
    sizes = [b - a for a, b in zip(starts, starts[1:])]
    assert sizes == [FIRST_BLOCK, 2 * FIRST_BLOCK, 256 * 1024]  # doubling, then block_bytes
    f.seek(123_456)
    assert f.read(10) == DATA[123_456:123_466] and f.tell() == 123_466
    f.seek(-4, io.SEEK_END)
    assert f.read() == DATA[-4:] and f.read() == b""


def test_a_stream_ended_early_reads_as_a_file_of_that_length():
    """A WARC range's reader ends the stream where its range ends: no block crosses that byte,
    so neighbouring ranges on other workers do not fetch each other's bytes."""
    server = Server()
    c, _ = client(server, block_bytes=1 << 20)
    f = open_stream(c, URL, buffer_size=4096)
    f.seek(100_000)
    f.raw.end_at(400_000)
    assert f.read() == DATA[100_000:400_000]
    assert server.ranges() == ["bytes=100000-399999"]  # one request for the range


def test_a_failed_stream_stays_failed_from_where_it_failed():
    server = Server(script=["ok", 503, 503, 503])
    c, _ = client(server, retries=2)
    raw = RangeReader(c, URL, FileInfo(size=len(DATA)))
    assert raw.read(FIRST_BLOCK) == DATA[:FIRST_BLOCK]
    with pytest.raises(HttpError) as first:
        raw.read(10)  # the next block: the server throttles it for good
    server.script = []  # the server has recovered; the stream must not read past the failure
    requests = len(server.requests)
    for pos in (FIRST_BLOCK, FIRST_BLOCK + 10, len(DATA) - 1):
        raw.seek(pos)
        with pytest.raises(HttpError) as again:
            raw.read(10)
        assert again.value is first.value
    assert len(server.requests) == requests  # without asking the server again
    raw.seek(FIRST_BLOCK - 100)  # the bytes before the failure can still be read, up to it
    assert raw.read(1000) == DATA[FIRST_BLOCK - 100:FIRST_BLOCK]


def test_settings_are_checked_and_name_the_field():
    for kw, field in [({"retries": -1}, "retries"), ({"backoff_initial": -1}, "backoff_initial"),
                      ({"backoff_max": 0.5}, "backoff_max"), ({"timeout": 0}, "timeout"),
                      ({"max_connections_per_host": 0}, "max_connections_per_host"),
                      ({"block_bytes": 10}, "block_bytes"), ({"ca_bundle": " "}, "ca_bundle"),
                      ({"ca_bundle": "https://x/ca.pem"}, "ca_bundle")]:
        with pytest.raises(ValueError, match=f"^{field}:"):
            HttpSettings(**kw)
