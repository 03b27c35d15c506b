"""Keep-alive connections that hold the analyzer's and the dashboard's share of the connection budget.

Each held connection sends one complete request (`GET /healthz` to the analyzer, a tokenless `GET /operator/` to the
dashboard) and then another every few seconds, well inside the idle timeout, so that it never looks idle to a
deadline that each response re-arms. First from two addresses (the per-address and per-network caps must stop
them), then from 64 networks with a few connections each (eviction of the oldest connection idle between requests
must make room). Meanwhile other callers' requests and a real test must get through.
"""
import base64, socket, threading, time

import suite


def request(port, path, source, keep_alive=True, extra=""):
    return ("GET %s HTTP/1.1\r\nHost: 127.0.0.1:%d\r\n%sConnection: %s\r\n\r\n"
            % (path, port, extra, "keep-alive" if keep_alive else "close")).encode()


def read_response(s):
    """Reads one response with a Content-Length body; its status, or 0 when the connection ended first."""
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = s.recv(4096)
        if not chunk:
            return 0
        data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    length = 0
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            length = int(value.strip())
    while len(body) < length:
        chunk = s.recv(4096)
        if not chunk:
            return 0
        body += chunk
    return int(head.split(b" ", 2)[1])


def hold(port, path, sources, count):
    """Opens `count` keep-alive connections from `sources` (round robin), each after one answered request."""
    held = []
    for index in range(count):
        source = sources[index % len(sources)]
        try:
            s = suite.connect(port, source=source, timeout=5)
            s.sendall(request(port, path, source))
            if read_response(s):
                held.append(s)
            else:
                s.close()
        except OSError:
            pass
    return held


def refresh(held, port, path, stop):
    """Every 4 s, one more request on each held connection (re-arming an idle deadline); drops closed ones."""
    while not stop.wait(4):
        for s in list(held):
            try:
                s.sendall(request(port, path, "-"))
                if not read_response(s):
                    raise OSError("closed")
            except OSError:
                held.remove(s)
                s.close()


def others(port, path, count, extra=""):
    """`count` requests from other callers, one connection each; how many were answered (any HTTP status)."""
    answered = 0
    for index in range(count):
        source = "127.0.99.%d" % (10 + index)
        try:
            s = suite.connect(port, source=source, timeout=5)
            s.sendall(request(port, path, source, keep_alive=False, extra=extra))
            if read_response(s):
                answered += 1
            s.close()
        except OSError:
            pass
    return answered


def attack(name, port, path, count, sources, extra="", with_real_test=False):
    stop = threading.Event()
    held = hold(port, path, sources, count)
    opened = len(held)
    thread = threading.Thread(target=refresh, args=(held, port, path, stop), daemon=True)
    thread.start()
    # Let one refresh round pass, so that every held connection has made more than one request.
    time.sleep(4.5)
    still = len(held)
    answered = others(port, path, 12, extra)
    suite.say("tried: %d keep-alive connections to the %s from %d addresses (%d answered their first request, %d "
              "still open after asking again 4 s later)" % (count, name, len(set(sources[:count])), opened, still))
    suite.expect(answered >= 11, "%s: %d of 12 requests of other callers answered" % (name, answered))
    if with_real_test:
        suite.real_test("keep-alive hold (%s, %d addresses)" % (name, len(sources)))
    stop.set()
    thread.join()
    for s in held:
        s.close()
    return opened


def run():
    token = open(suite.WORK + "/operator.token").read().strip()
    basic = "Authorization: Basic %s\r\n" % base64.b64encode(("operator:" + token).encode()).decode()
    two = ["127.0.9.2", "127.0.9.3"]
    # 64 networks (/24), 5 connections each: under any per-address or per-network cap.
    many = ["127.0.%d.%d" % (100 + index, 2 + copy) for index in range(64) for copy in range(5)]
    attack("analyzer", suite.ANALYZER, "/healthz", 320, two, with_real_test=True)
    attack("analyzer", suite.ANALYZER, "/healthz", 320, many, with_real_test=True)
    # Tokenless requests (401) hold the dashboard the same way; the operator's own requests carry the token.
    attack("dashboard", suite.DASHBOARD, "/operator/", 140, two, extra=basic)
    attack("dashboard", suite.DASHBOARD, "/operator/", 140, many, extra=basic)
