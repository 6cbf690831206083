"""A loopback HTTP server for the remote-import tests: serves a folder with Range support, the
Hugging Face hub's URL shape ({repo}/resolve/{revision}/{file}, with X-Repo-Commit), and faults
chosen by the first path segment. Binds 127.0.0.1 only.

Faults (prefix the normal path with one of them):
  /slow/...       waits 5 s before answering (the client's timeout must fire)
  /truncate/...   declares the requested length, sends half of it, closes
  /shortrange/... answers 206 with a consistent but shorter body than the range asked for
  /norange/...    ignores Range and sends the whole file with 200
  /error500/...   always HTTP 500
  /gated/...      always HTTP 401
  /flaky/...      HTTP 503 the first time a path is asked for, then as usual (retries must recover)

The hub's file list, GET /api/models/ORG/NAME/tree/REV?recursive=true, answers as the hub does: a
JSON array of {"type": "file"|"directory", "path", "size"} for the repo folder.
"""

import http.server
import json
import os
import re
import threading
import time

COMMIT = "0123456789abcdef0123456789abcdef01234567"
FAULTS = {"slow", "truncate", "shortrange", "norange", "error500", "gated", "flaky"}


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    root = "."
    log = []  # (path, range header, authorization) per request
    seen = set()  # paths asked for once (the flaky fault)

    def log_message(self, *args):  # quiet
        pass

    def _send(self, status, body=b"", headers=None):
        self.send_response(status)
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def _stream_whole(self, f, size, headers):
        """200 with the whole file, streamed (a client that has enough hangs up)."""
        self.send_response(200)
        for k, v in headers.items():
            self.send_header(k, v)
        self.send_header("Content-Length", str(size))
        self.end_headers()
        try:
            while True:
                chunk = f.read(1 << 16)
                if not chunk:
                    break
                self.wfile.write(chunk)
        except (BrokenPipeError, ConnectionResetError):
            pass
        self.close_connection = True

    def _tree(self, org, name, rev):
        repo = os.path.join(self.root, "hub", org, name)
        if rev not in ("main", COMMIT) or ".." in (org, name) or not os.path.isdir(repo):
            return self._send(404, b'{"error": "Repository not found"}')
        entries = []
        for folder, dirs, files in sorted(os.walk(repo)):
            rel = os.path.relpath(folder, repo)
            for d in sorted(dirs):
                entries.append({"type": "directory", "path": os.path.normpath(os.path.join(rel, d)), "size": 0})
            for f in sorted(files):
                entries.append({"type": "file", "path": os.path.normpath(os.path.join(rel, f)),
                                "size": os.path.getsize(os.path.join(folder, f))})
        return self._send(200, json.dumps(entries).encode(), {"Content-Type": "application/json"})

    def _file_for(self, parts):
        # Hub shape: ORG/NAME/resolve/REV/FILE
        if len(parts) >= 5 and parts[2] == "resolve":
            if parts[3] not in ("main", COMMIT):
                return None, {}
            return os.path.join(self.root, "hub", parts[0], parts[1], *parts[4:]), {"X-Repo-Commit": COMMIT}
        if parts and parts[0] == "files":
            return os.path.join(self.root, "files", *parts[1:]), {}
        return None, {}

    def do_GET(self):
        Handler.log.append((self.path, self.headers.get("Range"), self.headers.get("Authorization")))
        parts = [p for p in self.path.split("?")[0].split("/") if p]
        fault = parts[0] if parts and parts[0] in FAULTS else None
        if fault:
            parts = parts[1:]
        if fault == "slow":
            time.sleep(5)
        if fault == "error500":
            return self._send(500, b"internal error")
        if fault == "gated":
            return self._send(401, b"Access to model is restricted")
        if fault == "flaky" and self.path not in Handler.seen:
            Handler.seen.add(self.path)
            return self._send(503, b"try again")
        if len(parts) >= 6 and parts[:2] == ["api", "models"] and parts[4] == "tree":
            return self._tree(parts[2], parts[3], parts[5])
        path, extra = self._file_for(parts)
        if not path or ".." in parts or not os.path.isfile(path):
            return self._send(404, b"Entry not found")
        size = os.path.getsize(path)
        rng = self.headers.get("Range")
        m = re.fullmatch(r"bytes=(\d+)-(\d*)", rng or "")
        with open(path, "rb") as f:
            if not m or fault == "norange":
                return self._stream_whole(f, size, extra)
            begin = int(m.group(1))
            end = min(int(m.group(2)) if m.group(2) else size - 1, size - 1)
            if begin >= size:
                return self._send(416, b"", {"Content-Range": "bytes */%d" % size})
            f.seek(begin)
            body = f.read(end - begin + 1)
        headers = dict(extra)
        if fault == "shortrange":
            body = body[: max(1, len(body) // 2)]
            end = begin + len(body) - 1
        headers["Content-Range"] = "bytes %d-%d/%d" % (begin, end, size)
        if fault == "truncate":
            self.send_response(206)
            for k, v in headers.items():
                self.send_header(k, v)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body[: len(body) // 2])
            self.wfile.flush()
            self.close_connection = True
            return
        self._send(206, body, headers)


def start(root):
    """Starts a server for `root` on 127.0.0.1 (a free port); returns (server, base URL)."""
    Handler.root = root
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, "http://127.0.0.1:%d" % server.server_address[1]
