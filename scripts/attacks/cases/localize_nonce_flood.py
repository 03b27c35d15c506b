"""localize-nonce-flood: unauthenticated localize requests from many addresses of one /24, each naming the fleet peer
127.0.0.78 with a new history count (no answer can be reused), so that every served one makes the server send signed
requests that each cost the peer a remembered nonce. The peer is this same server behind a TLS relay on
127.0.0.78:$PEER_PORT (attack-suite.sh lists 127.0.0.78 as a fleet peer and as one of the server's own fleet names),
so the nonces land in a real store. Afterwards the peer must still accept a real fleet request and refuse its replay.
IPv6 /64s cannot be shown here (loopback has only ::1); the unit tests cover them (FleetNonceBudgetTests).
"""
import json, os, socket, ssl, threading, time, urllib.parse
import suite

PEER = "127.0.0.78"
REQUESTS = 120
# The server's defaults: localize per network and minute, signed requests per peer and minute.
NETWORK_LIMIT = 12
PEER_BUDGET = 60

def relay(stop, counted):
    """TLS on 127.0.0.78:$PEER_PORT (the server's own certificate, which names it), forwarded in plain to the
    server's analyzer; counts the signed requests that pass."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(suite.WORK + "/certs/server.crt", suite.WORK + "/certs/server.key")
    listener = socket.socket()
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind((PEER, int(os.environ["PEER_PORT"])))
    listener.listen(64)
    listener.settimeout(0.2)
    def serve(raw):
        try:
            with context.wrap_socket(raw, server_side=True) as tls:
                tls.settimeout(10)
                request = b""
                while b"\r\n\r\n" not in request:
                    chunk = tls.recv(65536)
                    if not chunk:
                        return
                    request += chunk
                if b"x-wehe-fleet-signature" in request.lower():
                    counted.append(1)
                upstream = suite.connect(suite.ANALYZER)
                upstream.sendall(request)
                while True:
                    chunk = upstream.recv(65536)
                    if not chunk:
                        break
                    tls.sendall(chunk)
                upstream.close()
        except (OSError, ssl.SSLError):
            pass
    while not stop.is_set():
        try:
            raw, _ = listener.accept()
        except OSError:
            continue
        threading.Thread(target=serve, args=(raw,), daemon=True).start()
    listener.close()

def run():
    settings = json.load(open(suite.WORK + "/client/settings.json"))
    user = settings.get("userID", "@attack0001")
    history = settings.get("lastHistoryCount", 1)
    stop, counted = threading.Event(), []
    thread = threading.Thread(target=relay, args=(stop, counted), daemon=True)
    thread.start()
    info = lambda server, count: urllib.parse.quote(
        '{"server":"%s","historyCount":"%d","replayName":"TinyWeb"}' % (server, count))
    statuses = []
    def flood(indices):
        for index in indices:
            body = ("command=localize&userID=%s&testID=0&server1Info=%s&server2Info=%s&singleServerInfo=%%7B%%7D"
                    "&kwargs=%%7B%%7D" % (urllib.parse.quote(user), info("127.0.0.1", history), info(PEER, 1000 + index)))
            status, _ = suite.http(
                suite.ANALYZER,
                "POST /Results HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\nContent-Type: "
                "application/x-www-form-urlencoded\r\nContent-Length: %d\r\n\r\n%s" % (len(body), body),
                timeout=30, source="127.0.60.%d" % (2 + index))
            statuses.append(status)
    started = time.time()
    workers = [threading.Thread(target=flood, args=(range(k, REQUESTS, 8),)) for k in range(8)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    elapsed = time.time() - started
    served = statuses.count(200)
    time.sleep(0.5)  # the relay's last forwarded answers
    suite.say("tried: %d localize requests from %d addresses of 127.0.60.0/24 in %.1f s, each naming the peer %s "
              "with a new history count: %d served, %d refused 429; the peer received %d signed requests"
              % (REQUESTS, REQUESTS, elapsed, PEER, served, statuses.count(429), len(counted)))
    suite.expect(served <= NETWORK_LIMIT, "localize from one /24 limited: %d served (at most %d a minute)"
                 % (served, NETWORK_LIMIT))
    suite.expect(len(counted) <= PEER_BUDGET, "signed requests to the peer bounded: %d (budget %d a minute)"
                 % (len(counted), PEER_BUDGET))
    # A real fleet member's request to the peer afterwards: accepted once, refused when replayed.
    target = "/Results?command=getMeasurements&measurementType=clientXputs&userID=%s&historyCount=%d&testID=0" % (
        urllib.parse.quote(user), history)
    headers = suite.sign("GET", PEER, target)
    request = "GET %s HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n%s\r\n" % (target, PEER, headers)
    first, body = suite.http(suite.ANALYZER, request)
    again, replayed = suite.http(suite.ANALYZER, request)
    suite.expect(first == 200, "the peer accepts a real fleet request afterwards (HTTP %d%s)"
                 % (first, "" if first == 200 else ": " + body[-160:].decode(errors="replace")))
    suite.expect(again == 403 and b"replayed" in replayed, "and refuses its replay (HTTP %d)" % again)
    stop.set()
    thread.join()
    suite.real_test("localize-nonce-flood")
