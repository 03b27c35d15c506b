"""The DPI search API forged: a made-up rule for "Verizon (cellular)" / TinyWeb from a user who never ran a test here,
absurd `probeBytes` figures, and a flood of DPIanalysis requests. The server must refuse searches without a stored
test of that user with differentiation, clamp client-supplied figures to what the trace can carry, and rate-limit
requests per user and per network; a real test must still pass."""
import base64, json, re, time, urllib.parse

import suite
import fake_tests

CARRIER = "Verizon (cellular)"
HUGE = 3827160459400000


def dpi(source, pairs):
    body = urllib.parse.urlencode(pairs)
    status, data = suite.http(
        suite.ANALYZER,
        "POST /Results HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n"
        "Content-Type: application/x-www-form-urlencoded\r\nContent-Length: %d\r\n\r\n%s" % (len(body), body),
        source=source)
    text = data.split(b"\r\n\r\n", 1)[-1].decode(errors="replace")
    try:
        return status, json.loads(text)
    except ValueError:
        return status, {"raw": text[:200]}


def ask(source, user, history, test_id, left=-1, right=-1, diff="F", packet=None, probe_bytes=None):
    pairs = [("command", "DPIanalysis"), ("userID", user), ("carrierName", CARRIER),
             ("replayName", fake_tests.NAME), ("historyCount", str(history)), ("testID", str(test_id)),
             ("testedLeft", str(left)), ("testedRight", str(right)), ("diff", diff)]
    if packet:
        pairs.append(("testPacket", packet))
    if probe_bytes is not None:
        pairs.append(("probeBytes", str(probe_bytes)))
    return dpi(source, pairs)


def search(source, user, history, play_probe=None, limit=60):
    """Drives a search that 'finds' bytes [10, 14) of C_1; returns (requests, last answer)."""
    status, answer = ask(source, user, history, 2)
    requests, test_id = 1, 2
    while requests < limit and answer.get("success") and answer.get("response", {}).get("status") == "probe":
        probe = answer["response"]
        if play_probe:
            play_probe(test_id)
        overlaps = probe["testPacket"] == "C_1" and probe["testRegionLeft"] < 14 and probe["testRegionRight"] > 10
        status, answer = ask(source, user, history, test_id, probe["testRegionLeft"], probe["testRegionRight"],
                             "T" if overlaps else "F", probe["testPacket"], HUGE)
        requests += 1
        test_id += 1
    return requests, answer


def operator_dpi():
    token = open(suite.WORK + "/operator.token").read().strip()
    basic = base64.b64encode(("operator:" + token).encode()).decode()
    status, page = suite.http(suite.DASHBOARD, "GET /operator/dpi HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nAuthorization: Basic %s"
                              "\r\nConnection: close\r\n\r\n" % (suite.DASHBOARD, basic))
    return page.decode(errors="replace")


def samples(mbps, count=100):
    return json.dumps([[round(mbps * (1 + 0.05 * ((i * 7) % 5)), 3) for i in range(count)],
                       [round(0.006 * (i + 1), 4) for i in range(count)]])


def run():
    # 1. No test of this user ever ran here.
    requests, answer = search("127.0.11.2", "@dpiforge01", 1)
    page = operator_dpi()
    suite.say("tried: a DPI search for %s / TinyWeb by a user without any test: %d requests, last answer %s"
              % (CARRIER, requests, json.dumps(answer)[:140]))
    suite.expect(not answer.get("success"), "the search without a stored test is refused")
    suite.expect("@dpiforge01" not in page and "Verizon" not in page, "no made-up rule on /operator/dpi")

    # 2. A stored test with (client-measured) differentiation, then probes with absurd probeBytes.
    source, user = "127.0.12.2", "@dpiforge02"
    original = fake_tests.fake_test(source, user, 1, True, samples(1.0), 0, fake_tests.NAME)
    control = fake_tests.fake_test(source, user, 1, True, samples(10.0), 1, "TinyWebRandom-11212026")
    suite.say("a test of %s from %s: original %s, control %s" % (user, source, original, control))
    played = []

    def play(test_id):
        played.append(fake_tests.fake_test(source, user, 1, True, samples(10.0), test_id, fake_tests.NAME))

    requests, answer = search(source, user, 1, play)
    response = answer.get("response", {})
    used = response.get("bytesUsed", 0)
    tests = response.get("numTests", 0)
    suite.say("its DPI search with probeBytes=%d: %d requests, %d probe replays stored, outcome %s, bytesUsed %s"
              % (HUGE, requests, played.count("stored"), response.get("status"), used))
    trace_bytes = sum(len(p["payload"]) // 2 + p["response_len"] for p in fake_tests.PACKETS)
    suite.expect(answer.get("success") and response.get("status") == "rule",
                 "the search of a stored test with differentiation finds its rule%s"
                 % ("" if answer.get("success") else " (last answer: %s)" % json.dumps(answer)[:300]))
    suite.expect(used <= max(1, tests) * trace_bytes,
                 "bytesUsed %s is at most %d probes x %d trace bytes" % (used, tests, trace_bytes))
    page = operator_dpi()
    shown = [float(x.replace(",", "")) for x in re.findall(r"([0-9][0-9,]*\.?[0-9]*) MB", page)]
    suite.say("/operator/dpi shows %s MB" % shown)
    suite.expect(all(x < 1000 for x in shown), "no absurd megabyte figure on /operator/dpi")

    # 3. A flood of DPIanalysis requests from one network (8 addresses), with and without a stored test.
    start = time.time()
    statuses = {}
    for index in range(400):
        status, answer = ask("127.0.12.%d" % (2 + index % 8), user, 1, 2)
        key = "%d %s" % (status, answer.get("dpiError") or ("ok" if answer.get("success") else answer.get("error", "?"))[:40])
        statuses[key] = statuses.get(key, 0) + 1
    suite.say("tried: 400 DPIanalysis requests from 8 addresses of one /24 in %.1f s: %s"
              % (time.time() - start, statuses))
    limited = sum(n for k, n in statuses.items() if k.startswith("429"))
    suite.expect(limited >= 200, "rate-limited per user and network: %d of 400 answered 429" % limited)
    suite.real_test("dpi-forgery")
