"""Client-brought recorded tests (--accept-client-traces, on in this suite's server): an upload flood from one /24, a
body announced far beyond the limit, an upload trickled byte by byte, and someone else's upload claimed from another
address. The server must hold at most its per-network number of uploads, refuse the large body without reading it,
cut the trickle at the request deadline, give the claimant "unknown replay", and a real test must still pass."""
import json, threading, time

import suite

TRACE = json.load(open("Fixtures/replays/TinyWeb_11212026.pcap_client_all.json"))


def body(name):
    trace = list(TRACE)
    trace[3] = name
    return json.dumps(trace).encode()


def upload(name, source, user="@attack0001"):
    data = body(name)
    request = (b"POST /client-traces?userID=%s HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n"
               b"Content-Length: %d\r\n\r\n" % (user.encode(), len(data))) + data
    try:
        return suite.http(suite.ANALYZER, request, source=source)
    except OSError as error:
        return 0, str(error).encode()


def declare(name, source, user):
    s = suite.connect(suite.SIDE, source=source)
    s.sendall(suite.frame("%s;0;%s;0;1;False;127.0.0.1;3.3" % (user, name)) + suite.frame("[-1, null, null]"))
    data = b""
    try:
        while len(data) < 10 + 3:
            chunk = s.recv(64)
            if not chunk:
                break
            data += chunk
    except OSError:
        pass
    s.close()
    return data[10:].decode(errors="replace")


def run():
    # 1. A flood of valid uploads from one /24, 8 at a time.
    answers = []
    def worker(offset):
        for i in range(offset, 120, 8):
            answers.append(upload("Flood%d-11272026" % i, "127.0.10.%d" % (1 + i % 200))[0])
    start = time.time()
    threads = [threading.Thread(target=worker, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    suite.real_test("client-trace upload flood (while it runs, from another network)")
    for t in threads:
        t.join()
    held = answers.count(200)
    suite.say("tried: %d uploads from 127.0.10.0/24 in %.1f s: %d held, answers %s"
              % (len(answers), time.time() - start, held, sorted(set(answers))))
    suite.expect(held <= 4, "at most 4 uploads held for one network (%d)" % held)
    suite.expect(answers.count(429) == len(answers) - held, "every other upload refused with 429")

    # 2. A body announced at 1 GB: refused without reading it.
    start = time.time()
    s = suite.connect(suite.ANALYZER, source="127.0.12.1", timeout=15)
    s.sendall(b"POST /client-traces?userID=@attack0002 HTTP/1.1\r\nHost: 127.0.0.1\r\n"
              b"Content-Length: 1000000000\r\n\r\n" + b"[" * 65536)
    data = b""
    try:
        while b"\r\n\r\n" not in data:
            chunk = s.recv(65536)
            if not chunk:
                break
            data += chunk
    except OSError:
        pass
    elapsed = time.time() - start
    s.close()
    status = data.split(b" ", 2)[1] if data.startswith(b"HTTP/") else b"none"
    suite.say("tried: a 1 GB upload announced, 64 KiB sent: answer %s after %.2f s" % (status.decode(), elapsed))
    suite.expect(status == b"413" and elapsed < 5, "the oversized upload is refused with 413 before it is read")

    # 3. An upload trickled one byte a second: cut at the analyzer's request deadline (10 s).
    start = time.time()
    s = suite.connect(suite.ANALYZER, source="127.0.13.1", timeout=30)
    s.sendall(b"POST /client-traces?userID=@attack0003 HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 100000\r\n\r\n")
    closed = False
    try:
        for _ in range(25):
            s.sendall(b"[")
            time.sleep(1)
    except OSError:
        closed = True
    s.close()
    elapsed = time.time() - start
    suite.say("tried: an upload trickled at 1 byte/s: %s after %.0f s"
              % ("closed" if closed else "still open", elapsed))
    suite.expect(closed and elapsed < 16, "the trickled upload is cut at the request deadline")

    # 4. Someone else's upload, claimed with their user id from another address, then by another user id.
    status, _ = upload("Victim-11272026", "127.0.14.1", user="@victim0001")
    suite.expect(status == 200, "the victim's upload is held (%d)" % status)
    other_address = declare("Victim-11272026", "127.0.15.1", "@victim0001")
    other_user = declare("Victim-11272026", "127.0.14.1", "@thief00001")
    suite.say("tried: the victim's upload declared from another address (%s) and by another user (%s)"
              % (other_address, other_user))
    suite.expect(other_address.startswith("0;1") and other_user.startswith("0;1"),
                 "neither may replay it: unknown replay")
    suite.real_test("client-trace attacks (after)")
