"""Fake tests that fill the disk: sessions from one /24 that send one packet to the replay port (or play the tiny
TinyWeb replay for real, cheaply) and upload a large sample series, as fast as the server takes them. The server must
store no sample of a replay that did not run, must stop storing replays from that network at its quota, and a real
test from another network (127.0.0.1) must still pass."""
import json, os, socket, threading, time

import suite

TRACE = json.load(open("Fixtures/replays/TinyWeb_11212026.pcap_client_all.json"))
PACKETS = TRACE[0]
NAME = "TinyWeb-11212026"


def read_frame(s):
    data = b""
    while len(data) < 10:
        chunk = s.recv(10 - len(data))
        if not chunk:
            raise OSError("closed")
        data += chunk
    size, body = int(data), b""
    while len(body) < size:
        chunk = s.recv(size - len(body))
        if not chunk:
            raise OSError("closed")
        body += chunk
    return body.decode(errors="replace")


def replay_port(port_map):
    csp = PACKETS[0]["c_s_pair"]
    server = csp[csp.rindex("-") + 1:]
    host, port = port_map["tcp"][server[: server.rindex(".")]][server[server.rindex(".") + 1:]]
    return port


def fake_test(source, user, history, full, samples, test_id=0, name=NAME):
    """One session of TinyWeb (or its control); returns 'stored', 'refused <why>' or 'error <what>'."""
    try:
        s = suite.connect(suite.SIDE, source=source)
        s.sendall(suite.frame("%s;%d;%s;0;%d;False;127.0.0.1;3.3" % (user, test_id, name, history))
                  + suite.frame("[-1, null, null]"))
        grant = read_frame(s)
        if not grant.startswith("1;"):
            s.close()
            return "refused " + grant
        s.sendall(suite.frame("NoIperf") + suite.frame("NoMobileStats"))
        port_map = json.loads(read_frame(s))
        read_frame(s)
        r = suite.connect(replay_port(port_map), source=source)
        if full:
            # The whole replay, as fast as the server answers: every request, every response byte read.
            for packet in PACKETS:
                r.sendall(bytes.fromhex(packet["payload"]))
                want = packet["response_len"]
                while want > 0:
                    chunk = r.recv(min(262144, want))
                    if not chunk:
                        break
                    want -= len(chunk)
        else:
            r.sendall(bytes.fromhex(PACKETS[0]["payload"])[:10])  # one packet, not even a whole request
            time.sleep(0.1)  # so that the server has seen it before DONE
        r.close()
        s.sendall(suite.frame("DONE;0.5") + suite.frame(samples))
        try:
            reply = read_frame(s)
        except OSError:
            reply = ""
        s.close()
        return "stored" if reply == "OK" else "refused " + (reply or "(closed)")
    except (OSError, ValueError, KeyError) as error:
        return "error %s" % error


def run():
    database = os.path.join(suite.WORK, "server", "results.sqlite")
    size = lambda: sum(os.path.getsize(database + ext) for ext in ("", "-wal") if os.path.exists(database + ext))
    # A real client's upload: 100 samples over the 0.6-s TinyWeb replay (larger uploads are bounded by the replay's
    # duration, SampleBound).
    small = json.dumps([[round(1 + (i % 7) * 0.1, 3) for i in range(100)], [round((i + 1) * 0.006, 4) for i in range(100)]])
    # The attack's upload: 5000 samples (about 100 KB), more than a grant ever asks for; it must never be stored for
    # a replay that did not run (a real test's 100 samples may be, once the replay started, against the quota).
    large = json.dumps([[round(1 + (i % 7) * 0.1, 3) for i in range(5000)], [round((i + 1) * 0.001, 4) for i in range(5000)]])
    before = size()
    results = []
    lock = threading.Lock()
    start = time.time()

    def worker(index, full, rounds):
        for round_ in range(rounds):
            source = "127.0.9.%d" % (2 + (index * rounds + round_) % 250)
            user = "@fake%d%02d%04d" % (full, index, round_)
            outcome = fake_test(source, user, 1, full, small if full else large)
            with lock:
                results.append((full, outcome))

    # 1. One-packet fakes: 8 workers x 10.
    threads = [threading.Thread(target=worker, args=(i, False, 10)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    one_packet = [o for f, o in results if not f]
    stored_fakes = sum(1 for o in one_packet if o == "stored")
    suite.say("tried: %d one-packet fake tests from 127.0.9.0/24 in %.1f s: %d stored, %s"
              % (len(one_packet), time.time() - start, stored_fakes,
                 sorted(set(o[:60] for o in one_packet if o != "stored"))[:3]))
    suite.expect(stored_fakes == 0, "no one-packet fake test's large upload stored (%d of %d were)"
                 % (stored_fakes, len(one_packet)))

    # 2. Whole TinyWeb replays played for real from the same /24 (with a real client's 100 samples), until the
    #    network's quota refuses them.
    start = time.time()
    threads = [threading.Thread(target=worker, args=(i, True, 60)) for i in range(8)]
    for t in threads:
        t.start()
    suite.real_test("fake tests (while they run, from another network)")
    for t in threads:
        t.join()
    played = [o for f, o in results if f]
    stored = sum(1 for o in played if o == "stored")
    refused = [o for o in played if o.startswith("refused")]
    elapsed = time.time() - start
    suite.say("tried: %d played TinyWeb replays from the same /24 in %.1f s: %d stored, %d refused (%s)"
              % (len(played), elapsed, stored, len(refused), sorted(set(o[:70] for o in refused))[:3]))
    growth = (size() - before) / 1e6
    suite.say("database grew %.1f MB (%.2f MB per stored replay)" % (growth, growth / max(1, stored)))
    suite.expect(len(refused) > 0 and stored <= 400,
                 "the per-network quota stopped the replays: %d stored, %d refused" % (stored, len(refused)))
    suite.expect(any("quota" in o or "0;3" in o for o in refused), "the refusal says why (%s)"
                 % (refused[0][:100] if refused else "none"))
    suite.real_test("fake tests (after the quota was reached, from another network)")
