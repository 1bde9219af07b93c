"""s3_proxy - a fault-injecting HTTP proxy in front of the test's S3 server,
so that the S3 tests see a real server fail the way real ones do.  Only
the faults are made up; every other request reaches the real server as
it came (headers and signature included) and its answer comes back.

    s3_proxy.py PORTFILE UPSTREAM [--ports A-B] [--log FILE]
                [--rule ACTION:N:MATCH]... [--timeout SECONDS]

A rule applies to requests whose "METHOD PATH?QUERY" contains MATCH:
    500:N:MATCH  the first N such requests get 500 InternalError (N = 0:
    503:N:MATCH  every one), 503 SlowDown, 429 or 409
    429:N:MATCH  ConditionalRequestConflict (a conditional write meeting
    409:N:MATCH  another) in S3's XML error form;
    drop:N:MATCH the first N are read, then the connection is closed with
                 no answer;
    lost:N:MATCH the first N reach the server, whose answer is then lost:
                 the connection is closed with no answer (a request that
                 took effect, retried by a client that cannot know);
    die:N:MATCH  the Nth makes the proxy exit at once (exit status 3), as
                 a killed server would, mid-request.
The first rule that matches a request decides.  Binds the first free port
of the range (reusing a port just freed), writes it to PORTFILE, logs
"METHOD PATH?QUERY STATUS" a line to the log file, and serves until
SIGTERM or the timeout.
"""

import argparse
import http.client
import http.server
import os
import signal
import sys
import threading
import urllib.parse

CODES = {500: ("InternalError", "We encountered an internal error "
               "(injected by the test proxy)."),
         503: ("SlowDown", "Please reduce your request rate "
               "(injected by the test proxy)."),
         429: ("TooManyRequests", "Too many requests "
               "(injected by the test proxy)."),
         409: ("ConditionalRequestConflict", "A conflicting conditional "
               "operation is in progress (injected by the test proxy).")}


class Rule:
    def __init__(self, text):
        action, n, match = text.split(":", 2)
        self.action = action
        self.n = int(n)
        self.match = match
        self.seen = 0


class Proxy(http.server.ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True


def make_handler(upstream, rules, log, lock):
    up = urllib.parse.urlsplit(upstream)

    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args):
            pass

        def record(self, status):
            with lock:
                log.write("%s %s %s\n" % (self.command, self.path, status))
                log.flush()

        def decide(self):
            what = "%s %s" % (self.command, self.path)
            with lock:
                for r in rules:
                    if r.match not in what:
                        continue
                    r.seen += 1
                    if r.action == "die":
                        return "die" if r.seen == r.n else None
                    if r.n == 0 or r.seen <= r.n:
                        return r.action
                    return None
            return None

        def body(self):
            n = int(self.headers.get("Content-Length") or 0)
            return self.rfile.read(n) if n else b""

        def handle_one(self):
            action = self.decide()
            if action == "die":
                self.record("die")
                os._exit(3)
            data = self.body()
            if action == "drop":
                self.record("drop")
                self.close_connection = True
                return
            if action in ("500", "503", "429", "409"):
                status = int(action)
                code, msg = CODES[status]
                xml = ("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
                       "<Error><Code>%s</Code><Message>%s</Message>"
                       "</Error>" % (code, msg)).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/xml")
                self.send_header("Content-Length", str(len(xml)))
                self.end_headers()
                if self.command != "HEAD":
                    self.wfile.write(xml)
                self.record(status)
                return
            conn = http.client.HTTPConnection(up.hostname, up.port,
                                              timeout=60)
            conn.putrequest(self.command, self.path, skip_host=True,
                            skip_accept_encoding=True)
            for k, v in self.headers.items():
                conn.putheader(k, v)
            conn.endheaders(data if data else None)
            resp = conn.getresponse()
            payload = resp.read()
            if action == "lost":
                conn.close()
                self.record("lost %d" % resp.status)
                self.close_connection = True
                return
            self.send_response(resp.status)
            for k, v in resp.getheaders():
                if k.lower() not in ("transfer-encoding", "connection",
                                     "content-length", "server", "date"):
                    self.send_header(k, v)
            if self.command != "HEAD":
                self.send_header("Content-Length", str(len(payload)))
            elif resp.getheader("Content-Length") is not None:
                self.send_header("Content-Length",
                                 resp.getheader("Content-Length"))
            self.end_headers()
            if self.command != "HEAD":
                self.wfile.write(payload)
            conn.close()
            self.record(resp.status)

        do_GET = do_PUT = do_POST = do_DELETE = do_HEAD = handle_one

    return Handler


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("portfile")
    ap.add_argument("upstream")
    ap.add_argument("--ports", default="47200-47299")
    ap.add_argument("--log", default=os.devnull)
    ap.add_argument("--rule", action="append", default=[])
    ap.add_argument("--timeout", type=float, default=600)
    a = ap.parse_args()
    rules = [Rule(t) for t in a.rule]
    log = open(a.log, "a")
    handler = make_handler(a.upstream, rules, log, threading.Lock())
    lo, hi = (int(x) for x in a.ports.split("-"))
    server = None
    for port in range(lo, hi + 1):
        try:
            server = Proxy(("127.0.0.1", port), handler)
            break
        except OSError:
            continue
    if server is None:
        print("s3_proxy: no free port in %s" % a.ports, file=sys.stderr)
        return 2
    tmp = a.portfile + ".tmp"
    with open(tmp, "w") as f:
        f.write("%d\n" % port)
    os.rename(tmp, a.portfile)
    signal.signal(signal.SIGTERM, lambda *_: os._exit(0))
    threading.Timer(a.timeout, lambda: os._exit(0)).start()
    server.serve_forever()
    return 0


if __name__ == "__main__":
    sys.exit(main())
