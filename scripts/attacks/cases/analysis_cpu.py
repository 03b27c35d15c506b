"""CPU amplification through the analysis: fake tests whose two uploads have unequal sample counts of 10 000-20 000.

A test's analysis runs a two-sample KS test on the full lists and on 100 jackknife subsets. The exact p-value of
unequal sizes costs O(n·m), so a fake test of 20 000 and 19 999 samples cost the server tens of seconds of CPU, and a
few of them from one /24 starved every other task: real tests failed, side-channel answers took seconds.

From one /24 (127.0.9.x), each fake test is two admitted sessions (testID 0 and 1) that play their replay (the
trace's requests, every response read), then upload:
  * fast: 20 000 and 19 999 samples at a claimed 10 ms interval (200 s of replay) right away: more samples than the
    session's replay could have produced, to be refused without the OK;
  * held: 10 000 and 9 999 samples at a claimed 1 ms interval after holding the session 11 s: as many as the held
    replay could have produced, so they are stored and analysed (the asymptotic KS p-value, in bounded time).
Meanwhile another address asks the side channel (an unknown replay's refusal) every 0.25 s and times the answer,
and a real test runs: it must pass, side-channel answers must stay fast, and the held fake tests' analyses must be
answered within a bound (they are not refused, just cheap).
"""
import json, os, socket, threading, time, urllib.parse

import suite

NETWORK = "127.0.9."
HOLD_SECONDS = 11


def recv_exact(s, count):
    data = b""
    while len(data) < count:
        chunk = s.recv(count - len(data))
        if not chunk:
            raise OSError("closed")
        data += chunk
    return data


def message(s):
    return recv_exact(s, int(recv_exact(s, 10))).decode(errors="replace")


def samples(count, interval, level):
    # Two distinct levels so that D is large: the exact p-value then walks the whole lattice.
    values = ",".join("%d" % (level + index % 3) for index in range(count))
    times = ",".join("%.3f" % ((index + 1) * interval) for index in range(count))
    return "[[%s],[%s]]" % (values, times)


def fake_replay(source, user, test_id, count, interval, hold, level, outcome):
    """One admitted session that claims its replay and uploads `count` samples; outcome[key] = what came back."""
    key = (user, test_id)
    try:
        s = suite.connect(suite.SIDE, source=source, timeout=60)
        replay = "TinyWeb-11212026" if test_id == 0 else "TinyWebRandom-11212026"
        s.sendall(suite.frame("%s;%d;%s;0;1;False;%s;3.3" % (user, test_id, replay, source)))
        s.sendall(suite.frame("[-1, null, null]"))
        grant = message(s)
        if not grant.startswith("1;"):
            outcome[key] = "refused " + grant
            return
        s.sendall(suite.frame("NoIperf") + suite.frame("NoMobileStats"))
        ports = json.loads(message(s))
        message(s)  # sender count
        # Play the trace for real (its requests, every response read): a replay that did not run is refused.
        trace = json.load(open("Fixtures/replays/%s.pcap_client_all.json" % replay.replace("-", "_")))[0]
        recorded = trace[0]["c_s_pair"].rsplit("-", 1)[1]
        address, port = ".".join(recorded.split(".")[:4]), recorded.split(".")[4]
        port = int(ports["tcp"][address][port][1])
        replay_connection = suite.connect(port, source=source)
        for packet in trace:
            replay_connection.sendall(bytes.fromhex(packet["payload"]))
            recv_exact(replay_connection, packet.get("response_len") or 0)
        time.sleep(hold)
        s.sendall(suite.frame("DONE;%.3f" % (count * interval)))
        s.sendall(suite.frame(samples(count + 1, interval, level)))
        try:
            outcome[key] = message(s)
        except OSError:
            outcome[key] = "closed"
        replay_connection.close()
        s.close()
    except OSError as error:
        outcome[key] = "error %s" % error


def probe_side_channel(stop, latencies):
    while not stop.is_set():
        start = time.time()
        try:
            s = suite.connect(suite.SIDE, source="127.0.10.2", timeout=40)
            s.sendall(suite.frame("probe;0;NoSuch-01012030;0;1;False;127.0.0.1;3.3") + suite.frame("[-1, null, null]"))
            message(s)
            s.close()
            latencies.append(time.time() - start)
        except OSError:
            latencies.append(time.time() - start)
        stop.wait(0.25)


def single_result(user):
    target = "/Results?command=singleResult&userID=%s&historyCount=1&testID=1" % urllib.parse.quote(user)
    status, body = suite.http(suite.ANALYZER, "GET %s HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n" % target,
                              timeout=10)
    return body.split(b"\r\n\r\n", 1)[-1].decode(errors="replace")


def run():
    outcome = {}
    threads = []
    plan = [("fastcpu%d" % index, 20_000, 0.01, 0) for index in range(2)]
    plan += [("heldcpu%d" % index, 10_000, 0.001, HOLD_SECONDS) for index in range(2)]
    address = 2
    for user, count, interval, hold in plan:
        for test_id in (0, 1):
            # Unequal sizes: the control has one sample fewer.
            args = (NETWORK + str(address), user, test_id, count - test_id, interval, hold, 1 + 5 * test_id, outcome)
            threads.append(threading.Thread(target=fake_replay, args=args, daemon=True))
            address += 1
    stop = threading.Event()
    latencies = []
    prober = threading.Thread(target=probe_side_channel, args=(stop, latencies), daemon=True)
    started = time.time()
    for thread in threads:
        thread.start()
    prober.start()
    suite.say("tried: 4 fake tests from one /24 with unequal uploads of 20 000/19 999 samples (2 at once, claimed "
              "10 ms interval) and 10 000/9 999 (2 after holding the session %d s, claimed 1 ms)" % HOLD_SECONDS)
    time.sleep(2)
    suite.real_test("analysis-cpu (during the fake uploads)")
    for thread in threads:
        thread.join(timeout=max(1, HOLD_SECONDS + 20 - (time.time() - started)))
    suite.real_test("analysis-cpu (during the fake analyses)")
    answers = {}
    for user in ("heldcpu0", "heldcpu1"):
        begin = time.time()
        answer = ""
        while time.time() - begin < 20:
            try:
                answer = single_result(user)
            except OSError as error:
                answer = "error %s" % error
            if '"success": true' in answer or '"success":true' in answer:
                break
            time.sleep(1)
        answers[user] = (answer, time.time() - begin)
    stop.set()
    prober.join(timeout=45)
    fast = sorted(value for (user, _), value in outcome.items() if user.startswith("fast"))
    held = sorted(value for (user, _), value in outcome.items() if user.startswith("held"))
    suite.say("fast uploads answered: %s" % fast)
    suite.say("held uploads answered: %s" % held)
    suite.expect(len(fast) == 4 and all(value != "OK" for value in fast),
                 "uploads of more samples than the replay could produce are refused (%d of 4 not acknowledged)"
                 % sum(1 for value in fast if value != "OK"))
    suite.expect(len(held) == 4 and all(value == "OK" for value in held),
                 "uploads the held replays could produce are stored (%d of 4 acknowledged)"
                 % sum(1 for value in held if value == "OK"))
    for user, (answer, seconds) in sorted(answers.items()):
        suite.expect('"success": true' in answer or '"success":true' in answer,
                     "%s's analysis answered within 20 s (%.1f s): %s" % (user, seconds, answer[:90]))
    worst = max(latencies) if latencies else float("inf")
    median = sorted(latencies)[len(latencies) // 2] if latencies else float("inf")
    suite.expect(worst < 2.0, "side-channel answers during the attack: %d probes, median %.3f s, worst %.3f s (< 2 s)"
                 % (len(latencies), median, worst))
