"""Starting laya-serve on a loopback port and talking to it, for the tests in tests/serve/.

Only the Python standard library: http.client for ordinary requests, raw sockets for what a
client library will not send (stalled bodies, lies in Content-Length, chunked bodies), and
libzstd through ctypes for compressed bodies.
"""
import ctypes
import ctypes.util
import http.client
import json
import os
import signal
import socket
import subprocess
import time


class Server:
    """laya-serve on 127.0.0.1 and a free port; stops (SIGTERM, then SIGKILL) when closed."""

    def __init__(self, exe, models, args=(), env=None, timeout=60):
        cmd = [exe] + [a for m in models for a in ("--model", m)] + ["--host", "127.0.0.1", "--port", "0"]
        cmd += list(args)
        e = dict(os.environ)
        for k in list(e):
            if k.startswith("LAYA_") and k not in ("LAYA_SMOLLM2_GGUF",):
                del e[k]
        e.update(env or {})
        self.proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=e)
        self.port = None
        deadline = time.time() + timeout
        line = b""
        while time.time() < deadline:
            line = self.proc.stdout.readline()
            if not line:
                break
            if b"listening on http://" in line:
                self.port = int(line.decode().rsplit(":", 1)[1])
                break
        if self.port is None:
            self.proc.kill()
            raise RuntimeError("laya-serve did not start: %s %s" % (line, self.proc.stderr.read().decode()))

    def request(self, method, path, body=None, headers=None, timeout=60):
        """(status, headers dict (lower-case names), body bytes)."""
        c = http.client.HTTPConnection("127.0.0.1", self.port, timeout=timeout)
        try:
            if isinstance(body, (dict, list)):
                body = json.dumps(body).encode()
            elif isinstance(body, str):
                body = body.encode()
            c.request(method, path, body=body, headers=headers or {})
            r = c.getresponse()
            return r.status, {k.lower(): v for k, v in r.getheaders()}, r.read()
        finally:
            c.close()

    def post(self, path, body, headers=None):
        return self.request("POST", path, body, headers)

    def raw(self, data, read_timeout=15, then=None):
        """Sends raw bytes (then calls then(sock) if given); returns everything read until close."""
        s = socket.create_connection(("127.0.0.1", self.port), timeout=read_timeout)
        try:
            s.sendall(data)
            if then:
                then(s)
            out = b""
            while True:
                try:
                    b = s.recv(65536)
                except socket.timeout:
                    break
                if not b:
                    break
                out += b
            return out
        finally:
            s.close()

    def signal(self, sig):
        self.proc.send_signal(sig)

    def stop(self, timeout=30):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.stderr = self.proc.stderr.read().decode(errors="replace")
        return self.proc.returncode

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.stop()


def parse_raw_response(data):
    """(status, headers, body) of the first HTTP/1.1 response in `data` (Content-Length bodies)."""
    head, _, rest = data.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    status = int(lines[0].split()[1])
    headers = {}
    for line in lines[1:]:
        k, _, v = line.partition(":")
        headers[k.strip().lower()] = v.strip()
    n = int(headers.get("content-length", len(rest)))
    return status, headers, rest[:n]


_zstd = None


def zstd_compress(data, level=3):
    global _zstd
    if _zstd is None:
        _zstd = ctypes.CDLL(ctypes.util.find_library("zstd") or "libzstd.so.1")
        _zstd.ZSTD_compressBound.restype = ctypes.c_size_t
        _zstd.ZSTD_compressBound.argtypes = [ctypes.c_size_t]
        _zstd.ZSTD_compress.restype = ctypes.c_size_t
        _zstd.ZSTD_compress.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_void_p,
                                        ctypes.c_size_t, ctypes.c_int]
        _zstd.ZSTD_isError.argtypes = [ctypes.c_size_t]
    cap = _zstd.ZSTD_compressBound(len(data))
    out = ctypes.create_string_buffer(cap)
    n = _zstd.ZSTD_compress(out, cap, data, len(data), level)
    if _zstd.ZSTD_isError(n):
        raise RuntimeError("zstd failed")
    return out.raw[:n]
