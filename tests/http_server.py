"""A hostile file server for the tests of http(s):// inputs: a thread of the test's process on
127.0.0.1 (ephemeral port), serving a folder, honouring Range requests, and misbehaving on
purpose: a share of requests answered 503 ("Slow Down") or 429, a share of response bodies cut
after half their bytes (the connection closed under the reader).  With ``tls=True`` it speaks
https with a certificate for 127.0.0.1 signed by a CA made at test time (``cryptography``);
clients trust it through ``ca_path`` (the ``http.ca_bundle`` setting), never by turning
verification off.  Stopped by ``stop()`` (the fixtures' teardown)."""
from __future__ import annotations

import datetime as dt
import email.utils
import hashlib
import ipaddress
import os
import random
import re
import socket
import ssl
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import unquote

_RANGE_RE = re.compile(r"bytes=(\d+)-(\d*)$")


@dataclass
class Faults:
    """Shares of GET/HEAD requests that fail (drawn from a seeded generator)."""

    slow_down: float = 0.0  # 503 Slow Down
    too_many: float = 0.0  # 429 Too Many Requests
    cut: float = 0.0  # 200/206 whose body stops after half its bytes
    seed: int = 0
    retry_after: str | None = "0"  # the Retry-After header of 503/429 answers
    fail_from: int | None = None  # every GET of a range starting at or after this byte: 503


@dataclass
class Stats:
    requests: int = 0
    answered: dict = field(default_factory=dict)  # status or "cut" -> count
    bytes_sent: int = 0
    paths: dict = field(default_factory=dict)  # path -> requests
    in_flight: int = 0
    max_in_flight: int = 0


def make_certificates(folder: Path) -> tuple[Path, Path, Path]:
    """(CA certificate, server certificate, server key) for 127.0.0.1 and localhost."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    now = dt.datetime.now(dt.timezone.utc)
    ca_key, key = ec.generate_private_key(ec.SECP256R1()), ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "mtnlg test CA")])
    ca = (x509.CertificateBuilder().subject_name(ca_name).issuer_name(ca_name)
          .public_key(ca_key.public_key()).serial_number(x509.random_serial_number())
          .not_valid_before(now - dt.timedelta(hours=1)).not_valid_after(now + dt.timedelta(days=1))
          .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
          .add_extension(x509.KeyUsage(False, False, False, False, False, True, True, False, False),
                         critical=True)
          .add_extension(x509.SubjectKeyIdentifier.from_public_key(ca_key.public_key()), critical=False)
          .sign(ca_key, hashes.SHA256()))
    cert = (x509.CertificateBuilder()
            .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "127.0.0.1")]))
            .issuer_name(ca_name).public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - dt.timedelta(hours=1)).not_valid_after(now + dt.timedelta(days=1))
            .add_extension(x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1")),
                                                        x509.DNSName("localhost")]), critical=False)
            .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
            .add_extension(x509.ExtendedKeyUsage([x509.oid.ExtendedKeyUsageOID.SERVER_AUTH]),
                           critical=False)
            .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()),
                           critical=False)
            .sign(ca_key, hashes.SHA256()))
    folder.mkdir(parents=True, exist_ok=True)
    paths = folder / "ca.pem", folder / "server.pem", folder / "server.key"
    paths[0].write_bytes(ca.public_bytes(serialization.Encoding.PEM))
    paths[1].write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    paths[2].write_bytes(key.private_bytes(serialization.Encoding.PEM,
                                           serialization.PrivateFormat.PKCS8,
                                           serialization.NoEncryption()))
    return paths


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive: cut bodies hit reused connections too
    server: "_Server"

    def log_message(self, *args) -> None:  # quiet
        pass

    def do_HEAD(self) -> None:
        self._serve(body=False)

    def do_GET(self) -> None:
        self._serve(body=True)

    def _serve(self, body: bool) -> None:
        srv = self.server
        with srv.lock:
            srv.stats.requests += 1
            srv.stats.in_flight += 1
            srv.stats.max_in_flight = max(srv.stats.max_in_flight, srv.stats.in_flight)
            draw = srv.rng.random()
            srv.stats.paths[self.path] = srv.stats.paths.get(self.path, 0) + 1
        try:
            self._answer(body, draw)
        finally:
            with srv.lock:
                srv.stats.in_flight -= 1

    def _count(self, what) -> None:
        with self.server.lock:
            self.server.stats.answered[what] = self.server.stats.answered.get(what, 0) + 1

    def _refuse(self, status: int) -> None:
        self._count(status)
        self.send_response(status, "Slow Down" if status == 503 else None)
        if self.server.faults.retry_after is not None:
            self.send_header("Retry-After", self.server.faults.retry_after)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def _answer(self, body: bool, draw: float) -> None:
        f = self.server.faults
        m = _RANGE_RE.match(self.headers.get("Range", ""))
        if f.fail_from is not None and m and int(m.group(1)) >= f.fail_from:
            self._refuse(503)  # a server that stays throttled for the rest of the file
            return
        if draw < f.slow_down + f.too_many:
            self._refuse(503 if draw < f.slow_down else 429)
            return
        path = self.server.root / unquote(self.path.split("?", 1)[0]).lstrip("/")
        if ".." in Path(self.path).parts or not path.is_file():
            self._count(404)
            self.send_response(404)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        size = path.stat().st_size
        start, end, status = 0, size, 200
        if m:
            start = int(m.group(1))
            end = min(size, int(m.group(2)) + 1) if m.group(2) else size
            if start >= size:
                self._count(416)
                self.send_response(416)
                self.send_header("Content-Range", f"bytes */{size}")
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            status = 206
        st = path.stat()
        self.send_response(status)
        self.send_header("Content-Length", str(end - start))
        self.send_header("Accept-Ranges", "bytes")
        self.send_header("ETag", '"%s"' % hashlib.sha1(f"{st.st_mtime_ns}-{size}".encode()).hexdigest())
        self.send_header("Last-Modified", email.utils.formatdate(st.st_mtime, usegmt=True))
        if status == 206:
            self.send_header("Content-Range", f"bytes {start}-{end - 1}/{size}")
        self.end_headers()
        if not body:
            self._count(status)
            return
        with open(path, "rb") as fh:
            fh.seek(start)
            data = fh.read(end - start)
        cut = draw < f.slow_down + f.too_many + f.cut and len(data) > 1
        if cut:
            data = data[:len(data) // 2]
        self.wfile.write(data)
        self.wfile.flush()
        with self.server.lock:
            self.server.stats.bytes_sent += len(data)
        self._count("cut" if cut else status)
        if cut:  # the connection dies under the reader
            self.close_connection = True
            try:
                self.connection.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True

    def handle_error(self, request, client_address) -> None:
        pass  # a client that refused our certificate, or hung up on a cut body: expected here


class FileServer:
    """``FileServer(root, faults, tls=..., certs=folder)``; ``url`` is its base URL."""

    def __init__(self, root: Path, faults: Faults | None = None, tls: bool = False,
                 certs: Path | None = None) -> None:
        self.server = _Server(("127.0.0.1", 0), _Handler)
        self.server.root = Path(root)
        self.server.faults = faults or Faults()
        self.server.rng = random.Random(self.server.faults.seed)
        self.server.lock = threading.Lock()
        self.server.stats = Stats()
        self.ca_path: Path | None = None
        scheme = "http"
        if tls:
            self.ca_path, cert, key = make_certificates(certs or Path(root).parent / "certs")
            context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            context.load_cert_chain(cert, key)
            self.server.socket = context.wrap_socket(self.server.socket, server_side=True,
                                                     do_handshake_on_connect=False)
            scheme = "https"
        self.url = f"{scheme}://127.0.0.1:{self.server.server_address[1]}"
        self._thread = threading.Thread(target=self.server.serve_forever, name="test-file-server",
                                        daemon=True)
        self._thread.start()

    @property
    def stats(self) -> Stats:
        return self.server.stats

    @property
    def faults(self) -> Faults:
        return self.server.faults

    def set_faults(self, faults: Faults) -> None:
        with self.server.lock:
            self.server.faults = faults
            self.server.rng = random.Random(faults.seed)

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()
        self._thread.join(timeout=10)

    def __enter__(self) -> "FileServer":
        return self

    def __exit__(self, *exc) -> None:
        self.stop()


def files_under(root: Path) -> list[str]:
    return sorted(os.path.relpath(p, root) for p in Path(root).rglob("*") if p.is_file())
