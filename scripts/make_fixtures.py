#!/usr/bin/env python3
"""Writes the project's own small synthetic replay traces (Fixtures/), deterministically.

They exercise what the published traces do not: IPv6 flows, UDP keep-alives with empty payloads, an HTTP request
with a query string, an iOS-format catalog. Run from the repository root: python3 scripts/make_fixtures.py
"""
import hashlib
import json
import os
import random

random.seed(20261121)
root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "Fixtures")


def invert(b):
    return bytes(x ^ 0xFF for x in b)


def http_control(b):
    # The HTTP rule of the control generator: method, version, header names kept; path/values inverted.
    head, _, body = b.partition(b"\r\n\r\n")
    lines = head.split(b"\r\n")
    method, target, version = lines[0].split(b" ")
    path, q, query = target.partition(b"?")
    parts = []
    for kv in query.split(b"&") if q else []:
        k, e, v = kv.partition(b"=")
        parts.append(k + e + invert(v))
    out = method + b" " + invert(path) + (b"?" + b"&".join(parts) if q else b"") + b" " + version
    for line in lines[1:]:
        name, sep, value = line.partition(b": ")
        out += b"\r\n" + name + sep + invert(value)
    return out + b"\r\n\r\n" + invert(body)


def tcp_entry(csp, payload, ts, resp):
    return {"c_s_pair": csp, "payload": payload.hex(), "timestamp": ts, "response_len": resp,
            "response_hash": hashlib.sha1(bytes(resp)).hexdigest() if resp else None}


def write(name, obj):
    with open(os.path.join(root, "replays", name), "w") as f:
        json.dump(obj, f)


# 1. TinyWeb: IPv4 HTTP GET on port 80 with a query string, three request groups, 0.6 s.
csp4 = "198.018.000.010.40001-198.018.002.002.00080"
reqs = [
    (b"GET /video/seg1.mp4?quality=hd&token=abc123 HTTP/1.1\r\nHost: media.tinyweb.example\r\nAccept: */*\r\n\r\n", 0.0, 120000),
    (b"GET /video/seg2.mp4?quality=hd&token=abc123 HTTP/1.1\r\nHost: media.tinyweb.example\r\nAccept: */*\r\n\r\n", 0.25, 0),
    (b"GET /video/seg3.mp4?quality=hd&token=abc123 HTTP/1.1\r\nHost: media.tinyweb.example\r\nAccept: */*\r\n\r\n", 0.3, 200000),
    (b"GET /video/seg4.mp4?quality=hd&token=abc123 HTTP/1.1\r\nHost: media.tinyweb.example\r\nAccept: */*\r\n\r\n", 0.6, 80000),
]
write("TinyWeb_11212026.pcap_client_all.json",
      [[tcp_entry(csp4, p, t, r) for p, t, r in reqs], [], [csp4], "TinyWeb-11212026"])
write("TinyWebRandom_11212026.pcap_client_all.json",
      [[tcp_entry(csp4, http_control(p), t, r) for p, t, r in reqs], [], [csp4], "TinyWebRandom-11212026"])

# 2. TinySix: IPv6 TLS-like stream on port 443, 2 groups.
csp6 = "2001:2:0:1::2.51000-2001:2:0:2::2.00443"
hello = bytes([0x16, 0x03, 0x01, 0x00, 0x40]) + b"\x01" + bytes(random.randrange(256) for _ in range(58)) + b"tinysix.example"
reqs6 = [(hello, 0.0, 3000), (bytes(random.randrange(256) for _ in range(41)), 0.05, 0),
         (bytes(random.randrange(256) for _ in range(77)), 0.1, 150000)]
write("TinySix_11212026.pcap_client_all.json",
      [[tcp_entry(csp6, p, t, r) for p, t, r in reqs6], [], [csp6], "TinySix-11212026"])
write("TinySixRandom_11212026.pcap_client_all.json",
      [[tcp_entry(csp6, invert(p), t, r) for p, t, r in reqs6], [], [csp6], "TinySixRandom-11212026"])

# 3. TinyCall: UDP flow with 20 ms voice-like datagrams, an idle gap filled by empty keep-alives, 1.2 s.
cspu = "198.018.000.010.14225-198.018.002.002.63308"
udp = []
t = 0.0
for i in range(30):
    udp.append((bytes([0x80, 0x60, i % 256]) + bytes(random.randrange(256) for _ in range(57)), round(t, 6)))
    t += 0.02
udp.append((b"", 0.7))   # keep-alives: empty payloads
udp.append((b"", 0.8))
for i in range(20):
    udp.append((bytes([0x80, 0x60, (30 + i) % 256]) + bytes(random.randrange(256) for _ in range(57)), round(0.9 + 0.015 * i, 6)))
write("TinyCall_11212026.pcap_client_all.json",
      [[{"payload": p.hex(), "timestamp": ts, "c_s_pair": cspu, "end": False} for p, ts in udp], ["14225"], [], "TinyCall-11212026"])
write("TinyCallRandom_11212026.pcap_client_all.json",
      [[{"payload": invert(p).hex(), "timestamp": ts, "c_s_pair": cspu, "end": False} for p, ts in udp], ["14225"], [], "TinyCallRandom-11212026"])

# 4. Port test pair: 1 MB down on port 8081 and its 443 control, no timing.
def port(n, name):
    cspp = "198.018.000.010.40100-198.018.002.002.%05d" % n
    e = [tcp_entry(cspp, bytes([0x17, 0x03, 0x03, 0x00, 0x20]) + bytes(32), 0.0, 500000),
         tcp_entry(cspp, bytes([0x17, 0x03, 0x03, 0x00, 0x20]) + bytes(32), 0.01, 500000)]
    return [e, [], [cspp], name]
write("port_8081.pcap_client_all.json", port(8081, "port_8081"))
write("port_443.pcap_client_all.json", port(443, "port_443"))

catalog = {"apps": [
    {"name": "Tiny Web", "size": 1, "time": 1, "image": "tinyweb", "datafile": "TinyWeb_11212026.pcap_client_all.json",
     "randomdatafile": "TinyWebRandom_11212026.pcap_client_all.json", "category": "VIDEO"},
    {"name": "Tiny Six", "size": 1, "time": 1, "image": "tinysix", "datafile": "TinySix_11212026.pcap_client_all.json",
     "randomdatafile": "TinySixRandom_11212026.pcap_client_all.json", "category": "MUSIC"},
    {"name": "Tiny Call", "size": 1, "time": 2, "image": "tinycall", "datafile": "TinyCall_11212026.pcap_client_all.json",
     "randomdatafile": "TinyCallRandom_11212026.pcap_client_all.json", "category": "CONFERENCING"},
    {"name": "8081 Test", "size": 1, "time": 2, "image": "port8081", "datafile": "port_8081.pcap_client_all.json",
     "category": "SMALL_PORT"},
    {"name": "Absent App", "size": 1, "time": 5, "image": "absent", "datafile": "Absent_11212026.pcap_client_all.json",
     "randomdatafile": "AbsentRandom_11212026.pcap_client_all.json", "category": "VIDEO", "frenchOnly": True},
], "port443small": "port_443.pcap_client_all.json", "port443large": "port_443_large.pcap_client_all.json"}
with open(os.path.join(root, "replays", "apps_list.json"), "w") as f:
    json.dump(catalog, f, indent=1)

ios = {"apps": [
    {"name": "Tiny Web", "size": "1 MB", "time": 1, "icon": "tinyweb", "replayFile": "TinyWeb_11212026.pcap_client_all",
     "randomReplayFile": "TinyWebRandom_11212026.pcap_client_all", "portTest": False, "largeTest": False, "appType": "video"},
    {"name": "Port 8081", "size": "1 MB", "time": 2, "icon": "port", "replayFile": "port_8081.pcap_client_all",
     "randomReplayFile": "port_443.pcap_client_all", "portTest": True, "largeTest": False, "appType": "port"},
    {"name": "Hidden Call", "size": "1 MB", "time": 2, "icon": "tinycall", "replayFile": "TinyCall_11212026.pcap_client_all",
     "randomReplayFile": "TinyCallRandom_11212026.pcap_client_all", "portTest": False, "largeTest": False,
     "appType": "videocall", "hidden": True, "englishOnly": True},
]}
with open(os.path.join(root, "ios", "app_list.json"), "w") as f:
    json.dump(ios, f, indent=1)
print("fixtures written")
