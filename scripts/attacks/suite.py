"""The attack suite's cases (run by scripts/attack-suite.sh, one case per process: python3 suite.py NAME).

Each case attacks the wehe-server the shell script started and, while it holds its connections (or right after),
runs a real test through $REAL_TEST, which must pass. Helpers below are shared by the cases in cases/.
"""
import base64, hashlib, hmac, json, os, random, socket, ssl, subprocess, sys, threading, time, urllib.parse

SIDE, ANALYZER, DASHBOARD = int(os.environ["SIDE"]), int(os.environ["ANALYZER"]), int(os.environ["DASHBOARD"])
WORK = os.environ["WORK"]
failed = False

def say(text):
    print("  " + text, flush=True)

def expect(condition, text):
    global failed
    say(("ok    " if condition else "FAIL  ") + text)
    failed = failed or not condition

def real_test(label):
    global failed
    result = subprocess.run([os.environ["REAL_TEST"], label])
    failed = failed or result.returncode != 0

def connect(port, source="127.0.0.1", timeout=10):
    s = socket.socket()
    s.settimeout(timeout)
    s.bind((source, 0))
    s.connect(("127.0.0.1", port))
    return s

def frame(text):
    body = text.encode() if isinstance(text, str) else text
    return b"%010d" % len(body) + body

def closed_within(sockets, seconds):
    """How many of the sockets the server closed within `seconds`."""
    deadline = time.time() + seconds
    closed = 0
    for s in sockets:
        s.settimeout(max(0.05, deadline - time.time()))
        try:
            while True:
                if not s.recv(4096):
                    closed += 1
                    break
        except (socket.timeout, TimeoutError):
            pass
        except OSError:
            closed += 1
    return closed

def http(port, text, host="127.0.0.1", timeout=10, source="127.0.0.1"):
    """Sends one raw HTTP request from `source` and reads to the close: (status, raw response)."""
    s = connect(port, source=source, timeout=timeout)
    s.sendall(text.encode() if isinstance(text, str) else text)
    data = b""
    try:
        while True:
            chunk = s.recv(65536)
            if not chunk:
                break
            data += chunk
    except OSError:
        pass
    s.close()
    status = data.split(b" ", 2)[1] if data.startswith(b"HTTP/") else b"0"
    return int(status), data

def idle():
    held = []
    for index in range(600):
        port = (SIDE, ANALYZER, DASHBOARD)[index % 3]
        try:
            held.append((port, connect(port, source="127.0.1.%d" % (2 + index % 200))))
        except OSError:
            pass
    say("tried: 600 silent connections (side channel, analyzer, dashboard) from 200 addresses; %d open" % len(held))
    real_test("idle")
    http_sockets = [s for port, s in held if port != SIDE]
    closed = closed_within(http_sockets, 9)
    expect(closed == len(http_sockets), "analyzer/dashboard: %d of %d silent connections closed by the server within 9 s"
           % (closed, len(http_sockets)))
    side = [s for port, s in held if port == SIDE]
    closed = closed_within(side, 12)
    expect(closed == len(side), "side channel: %d of %d silent connections closed within 12 s" % (closed, len(side)))
    for _, s in held:
        s.close()

def slow_headers():
    stop = threading.Event()
    sockets = []
    for index in range(60):
        s = connect(ANALYZER, source="127.0.2.%d" % (2 + index))
        s.sendall(b"GET /Results?command=defaultSetting HTTP/1.1\r\n")
        sockets.append(s)
    def trickle():
        while not stop.is_set():
            for s in sockets:
                try:
                    s.sendall(b"X")
                except OSError:
                    pass
            time.sleep(0.5)
    thread = threading.Thread(target=trickle, daemon=True)
    thread.start()
    say("tried: 60 analyzer requests trickling one header byte per 0.5 s")
    real_test("slow-headers")
    closed = closed_within(sockets, 12)
    stop.set()
    expect(closed == len(sockets), "%d of %d trickling requests closed at the request deadline" % (closed, len(sockets)))
    status, _ = http(ANALYZER, "GET /Results?command=defaultSetting HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
    expect(status == 200, "the analyzer still answers (HTTP %d)" % status)

def trickle_side():
    pre, admitted = [], []
    for index in range(40):
        pre.append(connect(SIDE, source="127.0.3.%d" % (2 + index)))
    for index in range(20):
        s = connect(SIDE, source="127.0.4.%d" % (2 + index))
        s.sendall(frame("trickle%03d;0;TinyWeb-11212026;0;1;False;127.0.0.1;3.3" % index) + frame("[-1, null, null]"))
        admitted.append(s)
    stop = threading.Event()
    def trickle():
        # One digit of a length prefix every 3 s: never a whole message (10 digits) before the deadlines.
        while not stop.is_set():
            for s in pre + admitted:
                try:
                    s.sendall(b"0")
                except OSError:
                    pass
            stop.wait(3)
    thread = threading.Thread(target=trickle, daemon=True)
    thread.start()
    say("tried: 40 side channels trickling a length prefix, 20 admitted sessions that then only trickle bytes")
    real_test("trickle")
    closed_pre = closed_within(pre, 12)
    closed_admitted = closed_within(admitted, 25)
    stop.set()
    expect(closed_pre == len(pre), "%d of %d trickling declarations closed (first-message deadline)" % (closed_pre, len(pre)))
    expect(closed_admitted == len(admitted), "%d of %d stalled sessions closed (progress deadline, not the 5 min watchdog)"
           % (closed_admitted, len(admitted)))

def declarations():
    settings = json.load(open(WORK + "/client/settings.json"))
    user = settings.get("userID", "")
    stop = threading.Event()
    tried = [0, 0]
    def impostor():
        # The real user's id from another address (refused: unknown replay; admitted: a known one), and the real
        # client's address as realIP from another one.
        while not stop.is_set():
            for replay in ("NoSuch-01012030", "TinyWeb-11212026"):
                try:
                    s = connect(SIDE, source="127.0.5.9")
                    s.sendall(frame("%s;0;%s;0;1;False;127.0.0.1;3.3" % (user, replay)) + frame("[-1, null, null]"))
                    s.recv(100)
                    s.close()
                    tried[0] += 1
                except OSError:
                    pass
            time.sleep(0.05)
    holders = []
    for index in range(64):
        try:
            s = connect(SIDE, source="127.0.6.%d" % (2 + index))
            s.sendall(frame("holder%04d;0;TinyWeb-11212026;0;1;False;127.0.0.1;3.3" % index) + frame("[-1, null, null]"))
            holders.append(s)
            tried[1] += 1
        except OSError:
            pass
    grants = []
    for s in holders:
        try:
            grants.append(s.recv(100)[10:].decode())
        except OSError:
            grants.append("")
    refused = sum(1 for g in grants if g.startswith("0;3"))
    thread = threading.Thread(target=impostor, daemon=True)
    thread.start()
    say("tried: 64 sessions held from one /24 (%d refused 0;3 by the per-network cap), and the real user's id "
        "declared from another address during the real test" % refused)
    expect(refused >= 64 - 32, "the per-/24 cap refused %d of 64 sessions" % refused)
    real_test("declarations")
    stop.set()
    thread.join()
    say("impostor declarations sent during the real test: %d" % tried[0])
    for s in holders:
        s.close()

def sign(method, host, target, body=b"", date=None, nonce=None):
    secret = open(WORK + "/fleet.secret").read().strip().encode()
    date = date or int(time.time())
    nonce = nonce or os.urandom(16).hex()
    message = "wehe-fleet-v2\n%s\n%s\n%s\n%d\n%s\n%s" % (method, host, target, date, nonce, hashlib.sha256(body).hexdigest())
    signature = hmac.new(secret, message.encode(), hashlib.sha256).hexdigest()
    return "X-Wehe-Fleet-Date: %d\r\nX-Wehe-Fleet-Nonce: %s\r\nX-Wehe-Fleet-Signature: %s\r\n" % (date, nonce, signature)

def fleet_replay():
    # An attacker's listener where localize would send a signed request if it asked any named host.
    listener = socket.socket()
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind(("127.0.0.77", int(os.environ["PEER_PORT"])))
    listener.listen(16)
    listener.settimeout(0.2)
    info = lambda server, count: urllib.parse.quote('{"server":"%s","historyCount":"%d","replayName":"TinyWeb"}' % (server, count))
    user = json.load(open(WORK + "/client/settings.json")).get("userID", "@attack0001")
    history = json.load(open(WORK + "/client/settings.json")).get("lastHistoryCount", 1)
    body = ("command=localize&userID=%s&testID=0&server1Info=%s&server2Info=%s&singleServerInfo=%%7B%%7D&kwargs=%%7B%%7D"
            % (urllib.parse.quote(user), info("127.0.0.1", history), info("127.0.0.77", 99)))
    statuses = []
    for _ in range(10):
        status, _ = http(ANALYZER, "POST /Results HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n"
                         "Content-Type: application/x-www-form-urlencoded\r\nContent-Length: %d\r\n\r\n%s" % (len(body), body))
        statuses.append(status)
    contacted = 0
    try:
        while True:
            listener.accept()[0].close()
            contacted += 1
    except OSError:
        pass
    listener.close()
    say("tried: 10 localize requests naming 127.0.0.77 (statuses %s)" % sorted(set(statuses)))
    expect(contacted == 0, "the attacker's host was contacted %d times" % contacted)
    expect(429 in statuses, "localize rate-limited per address")
    target = "/Results?command=getMeasurements&measurementType=clientXputs&userID=%s&historyCount=%d&testID=0" % (
        urllib.parse.quote(user), history)
    elsewhere = sign("GET", "127.0.0.2", target)
    status, _ = http(ANALYZER, "GET %s HTTP/1.1\r\nHost: 127.0.0.2\r\nConnection: close\r\n%s\r\n" % (target, elsewhere))
    expect(status == 403, "a request signed for another fleet member is refused here (HTTP %d)" % status)
    headers = sign("GET", "127.0.0.1", target)
    first, _ = http(ANALYZER, "GET %s HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n%s\r\n" % (target, headers))
    again, _ = http(ANALYZER, "GET %s HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n%s\r\n" % (target, headers))
    expect(first == 200 and again == 403, "a signed request works once: HTTP %d, replayed HTTP %d" % (first, again))
    real_test("fleet-replay")

def rebinding():
    token = open(WORK + "/operator.token").read().strip()
    basic = base64.b64encode(("operator:" + token).encode()).decode()
    evil, _ = http(DASHBOARD, "GET /operator/ HTTP/1.1\r\nHost: evil.example\r\nAuthorization: Basic %s\r\n"
                   "Connection: close\r\n\r\n" % basic)
    anonymous, _ = http(DASHBOARD, "GET /operator/ HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
    good, _ = http(DASHBOARD, "GET /operator/ HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nAuthorization: Basic %s\r\n"
                   "Connection: close\r\n\r\n" % (DASHBOARD, basic))
    say("tried: operator page with Host evil.example, without the token, and properly")
    expect(evil == 403, "Host: evil.example refused (HTTP %d)" % evil)
    expect(anonymous == 401, "no token: HTTP %d" % anonymous)
    expect(good == 200, "with the token and the right host: HTTP %d" % good)
    real_test("rebinding")

def fuzz():
    rng = random.Random(14)
    frames = 0
    for index in range(400):
        try:
            s = connect(SIDE, source="127.0.7.%d" % (2 + index % 250), timeout=2)
            kind = rng.randrange(4)
            if kind == 0:
                data = bytes(rng.randrange(256) for _ in range(rng.randrange(1, 200)))
            elif kind == 1:
                data = frame(bytes(rng.randrange(256) for _ in range(rng.randrange(0, 300))))
            elif kind == 2:
                fields = ["x" * rng.randrange(0, 40) for _ in range(rng.randrange(1, 12))]
                data = frame(";".join(fields))
            else:
                data = b"%010d" % rng.randrange(0, 10**10)
            s.sendall(data)
            s.close()
            frames += 1
        except OSError:
            pass
    requests = []
    for index in range(200):
        junk = "".join(chr(rng.randrange(32, 127)) for _ in range(rng.randrange(0, 80)))
        lines = [
            "GET /Results?%s HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n" % urllib.parse.quote(junk),
            "POST /Results HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 999999999\r\nConnection: close\r\n\r\nx",
            "%s\r\n\r\n" % junk,
            "GET /Results?command=localize&server1Info=%s HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n"
            % urllib.parse.quote(junk),
        ]
        requests.append(lines[index % 4])
    answered = []
    def send(text):
        try:
            answered.append(http(ANALYZER, text, timeout=15)[0])
        except OSError:
            answered.append(0)
    # Concurrently: a request announcing a body it never sends is held until the request deadline.
    threads = [threading.Thread(target=send, args=(text,), daemon=True) for text in requests]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    say("tried: %d random side-channel frames, %d malformed analyzer requests (answers: %s)"
        % (frames, len(requests), sorted(set(answered))))
    real_test("fuzz")

CASES = {"idle": idle, "slow-headers": slow_headers, "trickle": trickle_side, "declarations": declarations,
         "fleet-replay": fleet_replay, "rebinding": rebinding, "fuzz": fuzz}

if __name__ == "__main__":
    # A case not defined above lives in cases/<name>.py (dashes become underscores) as a function run(); it imports
    # this file as `suite` for the helpers, and reports through suite.expect, so one exit status covers both.
    name = sys.argv[1]
    if name in CASES:
        CASES[name]()
    else:
        sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "cases"))
        import importlib
        sys.modules["suite"] = sys.modules["__main__"]
        importlib.import_module(name.replace("-", "_")).run()
    sys.exit(1 if failed else 0)
