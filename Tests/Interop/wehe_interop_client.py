#!/usr/bin/env python3
"""Independent Wehe test client for interoperability checks, written from spec/protocol.md only.

It shares no code with the Swift client: stdlib sockets, ssl and urllib. One run performs one full test (original
replay with testID 0, control replay with testID 1) against a Wehe server, asks the analyzer for the result and
checks every answer the spec fixes (framing, grant, port map, sender count, notifications, byte counts, OKs, analyzer
JSON with string values). Prints one summary line and exits 0 on success, 1 on failure.
"""

import argparse
import json
import math
import os
import random
import socket
import ssl
import string
import sys
import threading
import time
import urllib.error
import urllib.parse
import urllib.request


class Failure(Exception):
    """A check failed."""


# ---------------------------------------------------------------------------------------------- side channel


class SideChannel:
    """Length-prefixed messages (10 ASCII digits + body), spec section 5.1."""

    def __init__(self, host, port, use_tls, ca_file, source, timeout=60.0):
        raw = socket.create_connection((host, port), timeout=timeout, source_address=(source, 0) if source else None)
        raw.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        if use_tls:
            context = ssl.create_default_context(cafile=ca_file)
            context.check_hostname = False  # clients connect by IP and never check names (spec 14)
            self.sock = context.wrap_socket(raw)
        else:
            self.sock = raw
        self.sock.settimeout(timeout)
        self.buffer = b""
        self.notifications = []

    def send(self, body):
        data = body.encode() if isinstance(body, str) else body
        self.sock.sendall(b"%010d" % len(data) + data)

    def _read_exact(self, count):
        while len(self.buffer) < count:
            chunk = self.sock.recv(65536)
            if not chunk:
                raise Failure("side channel closed by the server")
            self.buffer += chunk
        data, self.buffer = self.buffer[:count], self.buffer[count:]
        return data

    def receive(self):
        prefix = self._read_exact(10)
        if not prefix.isdigit():
            raise Failure("bad length prefix %r" % prefix)
        return self._read_exact(int(prefix))

    def receive_reply(self):
        """Next message that is not a STARTED;/DONE; notification (recorded separately)."""
        while True:
            body = self.receive()
            text = body.decode("ascii", "replace")
            if text.startswith("STARTED;") or (text.startswith("DONE;") and text[5:].isdigit()):
                self.notifications.append(text)
                continue
            return text

    def close(self):
        try:
            self.sock.close()
        except OSError:
            pass


# ---------------------------------------------------------------------------------------------- traces


def load_trace(path):
    with open(path, "r", encoding="utf-8") as handle:
        q, udp_ports, tcp_pairs, name = json.load(handle)
    return {"packets": q, "udp_ports": udp_ports, "tcp_pairs": tcp_pairs, "name": name, "tcp": len(tcp_pairs) > 0}


def split_pair(csp):
    """c_s_pair -> (client_ip, client_port5, server_ip, server_port5), robust rule of spec 1.2."""
    client, server = csp[: csp.index("-")], csp[csp.rindex("-") + 1 :]
    return client[: client.rindex(".")], client[client.rindex(".") + 1 :], server[: server.rindex(".")], server[
        server.rindex(".") + 1 :
    ]


class Sampler:
    """Throughput buckets of length d seconds from replay start (spec 8)."""

    def __init__(self, interval):
        self.interval = interval
        self.start = None
        self.buckets = {}
        self.lock = threading.Lock()

    def begin(self):
        self.start = time.monotonic()

    def add(self, count):
        index = int((time.monotonic() - self.start) / self.interval)
        with self.lock:
            self.buckets[index] = self.buckets.get(index, 0) + count

    def series(self, duration):
        count = max(1, int(math.ceil(duration / self.interval)))
        values, times = [], []
        for index in range(count):
            values.append(round(self.buckets.get(index, 0) / 125000.0 / self.interval, 6))
            times.append(round((index + 1) * self.interval, 6))
        return [values, times]


# ---------------------------------------------------------------------------------------------- replays


def replay_tcp(trace, port_map, server_host, timed, deadline, sampler, source):
    client_ip, _, server_ip, server_port = split_pair(trace["packets"][0]["c_s_pair"])
    try:
        host, port = port_map["tcp"][server_ip][server_port]
    except KeyError:
        raise Failure("port map has no tcp entry for %s/%s" % (server_ip, server_port))
    sock = socket.create_connection((host or server_host, port), timeout=30, source_address=(source, 0) if source else None)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    expected = received = 0
    sampler.begin()
    start = time.monotonic()
    try:
        for packet in trace["packets"]:
            if time.monotonic() - start > deadline:
                break
            if timed:
                delay = start + packet["timestamp"] - time.monotonic()
                if delay > 0:
                    time.sleep(delay)
            sock.sendall(bytes.fromhex(packet["payload"]))
            want = packet["response_len"]
            expected += want
            while want > 0:
                chunk = sock.recv(min(65536, want))
                if not chunk:
                    raise Failure("server closed the replay connection with %d bytes missing" % want)
                want -= len(chunk)
                received += len(chunk)
                sampler.add(len(chunk))
    finally:
        duration = time.monotonic() - start
        sock.close()
    if received != expected:
        raise Failure("received %d response bytes, expected %d" % (received, expected))
    return duration, {"bytes": received}


def replay_udp(trace, port_map, server_host, deadline, sampler, side, sender_count, source):
    flows = {}
    for packet in trace["packets"]:
        _, client_port, server_ip, server_port = split_pair(packet["c_s_pair"])
        try:
            host, port = port_map["udp"][server_ip][server_port]
        except KeyError:
            raise Failure("port map has no udp entry for %s/%s" % (server_ip, server_port))
        flows.setdefault(client_port, (host or server_host, port))
    sockets = {}
    for client_port in flows:
        sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        sock.bind((source or "0.0.0.0", 0))
        sock.settimeout(0.5)
        sockets[client_port] = sock
    stop = threading.Event()
    counts = {"datagrams": 0, "bytes": 0}

    def receive(sock):
        while not stop.is_set():
            try:
                data = sock.recv(65536)
            except socket.timeout:
                continue
            except OSError:
                return
            counts["datagrams"] += 1
            counts["bytes"] += len(data)
            sampler.add(len(data))

    sampler.begin()
    threads = [threading.Thread(target=receive, args=(s,), daemon=True) for s in sockets.values()]
    for thread in threads:
        thread.start()
    start = time.monotonic()
    sent = 0
    for packet in trace["packets"]:
        if time.monotonic() - start > deadline:
            break
        delay = start + packet["timestamp"] - time.monotonic()
        if delay > 0:
            time.sleep(delay)
        _, client_port, _, _ = split_pair(packet["c_s_pair"])
        sockets[client_port].sendto(bytes.fromhex(packet["payload"]), flows[client_port])
        sent += 1
    duration = time.monotonic() - start
    # The server streams with the recorded timing; wait for its DONE notification(s) on the side channel.
    side.sock.settimeout(15)
    while sum(1 for n in side.notifications if n.startswith("DONE;")) < max(1, sender_count):
        body = side.receive().decode("ascii", "replace")
        if body.startswith("STARTED;") or body.startswith("DONE;"):
            side.notifications.append(body)
        else:
            raise Failure("unexpected side-channel message during the UDP replay: %r" % body[:40])
    time.sleep(0.3)
    stop.set()
    for thread in threads:
        thread.join(timeout=2)
    for sock in sockets.values():
        sock.close()
    started = [n for n in side.notifications if n.startswith("STARTED;")]
    if not started or not side.notifications[0].startswith("STARTED;"):
        raise Failure("no STARTED notification before DONE: %r" % side.notifications)
    for note in side.notifications:
        if len(note.split(";")[1]) != 5:
            raise Failure("notification port is not five digits: %r" % note)
    if counts["datagrams"] < 0.9 * sent:
        raise Failure("received %d datagrams for %d sent" % (counts["datagrams"], sent))
    return duration, {"sent": sent, "received": counts["datagrams"], "notifications": len(side.notifications)}


def run_replay(args, trace, test_id, end_of_test, history_count, app_time, port_test):
    side = SideChannel(args.server, args.side_port, args.tls, args.ca, args.source)
    try:
        declaration = ";".join(
            [args.user_id, str(test_id), trace["name"], "0", str(history_count), "True" if end_of_test else "False",
             args.real_ip, "3.3"]
        )
        side.send(declaration)
        side.send("[-1, null, null]")
        grant = side.receive().decode()
        fields = grant.split(";")
        if fields[0] != "1" or len(fields) != 3 or not fields[2].isdigit():
            raise Failure("replay %s refused: %r" % (trace["name"], grant))
        samples = int(fields[2])
        side.send("NoIperf")
        side.send("NoMobileStats")
        port_map = json.loads(side.receive().decode())
        if sorted(port_map.keys()) != ["tcp", "udp"]:
            raise Failure("port map keys are %r" % sorted(port_map.keys()))
        sender_count = int(side.receive().decode())
        if sender_count != (0 if trace["tcp"] else 1):
            raise Failure("sender count %d for a %s replay" % (sender_count, "TCP" if trace["tcp"] else "UDP"))
        cap = 30.0 if port_test else (45.0 if trace["tcp"] else 40.0)
        sampler = Sampler(min(app_time, cap) / samples)
        if trace["tcp"]:
            duration, detail = replay_tcp(trace, port_map, args.server, not port_test, cap, sampler, args.source)
        else:
            duration, detail = replay_udp(trace, port_map, args.server, cap, sampler, side, sender_count, args.source)
        side.send("DONE;%r" % duration)
        series = sampler.series(duration)
        side.send(json.dumps(series, separators=(",", ":")))
        if side.receive_reply() != "OK":
            raise Failure("no OK after the samples")
        side.send("Result;No")
        if side.receive_reply() != "OK":
            raise Failure("no OK after Result;No")
        detail["samples"] = len(series[0])
        return detail
    finally:
        side.close()


# ---------------------------------------------------------------------------------------------- analyzer


def analyzer_request(args, params, post):
    scheme = "https" if args.analyzer_tls else "http"
    url = "%s://%s:%d/Results" % (scheme, args.server, args.analyzer_port)
    context = None
    if args.analyzer_tls:
        context = ssl.create_default_context(cafile=args.ca)
        context.check_hostname = False
    encoded = urllib.parse.urlencode(params)
    if post:
        request = urllib.request.Request(url, data=encoded.encode(), method="POST")
        request.add_header("Content-type", "application/x-www-form-urlencoded")
    else:
        # The Java client does not percent-encode the user id; neither do we for GET.
        raw = "&".join("%s=%s" % (k, v) for k, v in params.items())
        request = urllib.request.Request(url + "?" + raw, method="GET")
    with urllib.request.urlopen(request, timeout=10, context=context) as response:
        return json.loads(response.read().decode())


def check_result(args, history_count):
    answer = analyzer_request(
        args, {"testID": "1", "historyCount": str(history_count), "userID": args.user_id, "command": "analyze"}, True
    )
    if answer != {"success": True}:
        raise Failure("analyze answered %r" % answer)
    result = None
    for _ in range(10):
        answer = analyzer_request(
            args, {"userID": args.user_id, "command": "singleResult", "historyCount": str(history_count), "testID": "1"},
            False,
        )
        if answer.get("success"):
            result = answer["response"]
            break
        if answer.get("error") != "No result found":
            raise Failure("singleResult answered %r" % answer)
        time.sleep(1)
    if result is None:
        raise Failure("no result after 10 polls")
    keys = ["replayName", "date", "userID", "extraString", "historyCount", "testID", "area_test", "ks2_ratio_test",
            "xput_avg_original", "xput_avg_test", "ks2dVal", "ks2pVal"]
    for key in keys:
        if not isinstance(result.get(key), str):
            raise Failure("singleResult %s is not a string: %r" % (key, result.get(key)))
    if result["userID"].strip().lower() != args.user_id.lower() or result["historyCount"] != str(history_count):
        raise Failure("singleResult is for %s/%s" % (result["userID"], result["historyCount"]))
    time.strptime(result["date"], "%Y-%m-%d %H:%M:%S")
    numbers = {key: float(result[key]) for key in keys[6:]}
    # Java client rule (spec 9.5): area threshold 0.5 (0.3 above 10 Mbit/s), KS p threshold 0.01.
    area_threshold = 0.3 if max(numbers["xput_avg_original"], numbers["xput_avg_test"]) > 10 else 0.5
    if abs(numbers["area_test"]) >= area_threshold and numbers["ks2pVal"] < 0.01:
        verdict = "differentiation"
    elif abs(numbers["area_test"]) >= area_threshold:
        verdict = "inconclusive"
    else:
        verdict = "no-differentiation"
    unknown = analyzer_request(
        args, {"userID": "nobody0000", "command": "singleResult", "historyCount": "1", "testID": "1"}, False
    )
    if unknown != {"success": False, "error": "No result found"}:
        raise Failure("singleResult for an unknown user answered %r" % unknown)
    return verdict, numbers


def whats_my_ip(args):
    url = "http://%s:%d/WHATSMYIPMAN" % (args.server, args.whatsmyip_port)
    sock = socket.create_connection((args.server, args.whatsmyip_port), timeout=5,
                                    source_address=(args.source, 0) if args.source else None)
    sock.sendall(("GET /WHATSMYIPMAN HTTP/1.1\r\nHost: %s\r\nConnection: keep-alive\r\n\r\n" % args.server).encode())
    data = b""
    while True:
        chunk = sock.recv(4096)
        if not chunk:
            break
        data += chunk
    sock.close()
    head, _, body = data.partition(b"\r\n\r\n")
    if not head.startswith(b"HTTP/1.1 200"):
        raise Failure("WHATSMYIPMAN answered %r (%s)" % (head[:40], url))
    address = body.decode().strip()
    if address == "127.0.0.1":
        raise Failure("WHATSMYIPMAN answered 127.0.0.1, which makes the Java client loop")
    if args.source and args.source != "127.0.0.1" and address != args.source:
        raise Failure("WHATSMYIPMAN answered %s for a client at %s" % (address, args.source))
    return address


# ---------------------------------------------------------------------------------------------- main


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--server", default="127.0.0.1")
    parser.add_argument("--side-port", type=int, default=55556)
    parser.add_argument("--tls", action="store_true", help="side channel over TLS (port 55556)")
    parser.add_argument("--analyzer-port", type=int, default=56566)
    parser.add_argument("--analyzer-tls", action="store_true")
    parser.add_argument("--ca", help="CA certificate the server's certificate chains to")
    parser.add_argument("--replays", default="../shared/replays")
    parser.add_argument("--test", required=True, help="catalog id: pandora, youtube, skype, port853s, ...")
    parser.add_argument("--source", help="local address to connect from (e.g. 127.0.0.12)")
    parser.add_argument("--whatsmyip-port", type=int, help="port answering WHATSMYIPMAN (80 + offset)")
    parser.add_argument("--user-id")
    parser.add_argument("--history-count", type=int, default=1)
    parser.add_argument("--real-ip", default="127.0.0.1")
    args = parser.parse_args()
    if not args.user_id:
        args.user_id = "@" + "".join(random.choice(string.ascii_lowercase + string.digits) for _ in range(9))

    started = time.monotonic()
    try:
        with open(os.path.join(args.replays, "apps_list.json"), encoding="utf-8") as handle:
            catalog = json.load(handle)
        test = args.test.lower()
        port_test = test.startswith("port") and test[-1] in "sl" and test[4:-1].isdigit()
        if port_test:
            category = "SMALL_PORT" if test.endswith("s") else "LARGE_PORT"
            entry = next(a for a in catalog["apps"] if a["image"] == test[:-1] and a["category"] == category)
            control = catalog["port443small" if category == "SMALL_PORT" else "port443large"]
        else:
            entry = next(a for a in catalog["apps"] if a["image"] == test)
            control = entry["randomdatafile"]
        original = load_trace(os.path.join(args.replays, entry["datafile"]))
        control_trace = load_trace(os.path.join(args.replays, control))
        details = []
        address = None
        if args.whatsmyip_port:
            address = whats_my_ip(args)
        details.append(run_replay(args, original, 0, False, args.history_count, entry["time"], port_test))
        details.append(run_replay(args, control_trace, 1, True, args.history_count, entry["time"], port_test))
        verdict, numbers = check_result(args, args.history_count)
    except (Failure, OSError, ValueError, KeyError, StopIteration, json.JSONDecodeError, urllib.error.URLError) as error:
        print("FAIL %s: %s: %s" % (args.test, type(error).__name__, error))
        return 1
    print(
        "PASS %s: %.1f s, original %s, control %s, verdict %s (area %.3f, ks2p %.3g, xput %.2f/%.2f Mbit/s)%s"
        % (args.test, time.monotonic() - started, details[0], details[1], verdict, numbers["area_test"],
           numbers["ks2pVal"], numbers["xput_avg_original"], numbers["xput_avg_test"],
           ", WHATSMYIPMAN %s" % address if address else "")
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
