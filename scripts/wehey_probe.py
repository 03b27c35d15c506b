#!/usr/bin/env python3
"""wehey_probe.py - where does a throttled flow queue? In-flow TTL-limited probes for WeHeY's blind spot
A prototype for the kernel Y testbed, run as root inside a server namespace:

    ip netns exec <TB>s python3 scripts/wehey_probe.py --out probes-s.jsonl --iface s0 --server 198.18.2.2

While the server sends a replay, the prober watches the server's outgoing TCP data segments (AF_PACKET on --iface)
and, every --period seconds, sends a copy of the latest one again with a small TTL (raw socket, IP_HDRINCL). The copy
is a retransmission of bytes already sent: it belongs to the same connection, so a classifier that marked the
connection (connmark, DPI) treats it like the flow's other packets and a throttler queues it behind them. The TTL
makes it expire at a chosen hop, whose router answers with ICMP time exceeded; the delay until the answer is the
queueing delay the flow meets *before* that hop.

* TTL --merge-ttl (2 on the Y bed: server -> branch router -> access router r) expires at the merge point, the first
  router both servers' paths share. A throttler on the branch queues (or drops) the probe before the merge point;
  a throttler on the shared segment (at or after the merge point's egress towards the client) does not.
* Out-of-flow probes: a UDP datagram with the same TTL to the client's address (not classified) gives the merge
  point's delay without the flow's queue: the baseline (every third probe).
* Full-path probes, sent at the same moments: the same copy with its own TTL reaches the client as a duplicate,
  which the client acknowledges at once with a D-SACK (RFC 2883) naming its sequence range (kind "flowpath"); a
  datagram to a closed port of the client answers with port unreachable (kind "basepath"). A queue that only the
  classified flow meets, anywhere on the path, delays the first and not the second.

One probe of each reach every --period seconds (1.05): routers rate-limit ICMP errors (Linux: one per second per destination
after a burst of six, net.ipv4.icmp_ratelimit), and faster probing loses answers to the limit, not to the path.

Each probe is one JSON line: {"t", "kind": "flow"|"base"|"flowpath"|"basepath", "ttl", "rtt_ms" (null when no
answer within 2 s), "from"}. Stops on SIGTERM/SIGINT. The merge-point copies never reach the client (their TTL runs
out first); each full-path copy is one spurious retransmission per period, which TCP ignores apart from the D-SACK.
"""
import argparse
import json
import os
import select
import signal
import socket
import struct
import time

ETH_P_ALL = 0x0003
PACKET_HOST = 0
PACKET_OUTGOING = 4


def tcp_checksum(packet):
    """Recomputes the TCP checksum of an IPv4 packet in place. Needed: a capture of outgoing packets on a device with
    checksum offload holds only the pseudo-header sum, and conntrack treats a copy with that sum as invalid (so a
    classifier that works on connection marks would not recognise it)."""
    ihl = (packet[0] & 0x0F) * 4
    total = struct.unpack("!H", packet[2:4])[0]
    segment = bytearray(packet[ihl:total])
    segment[16:18] = b"\0\0"
    data = bytes(packet[12:20]) + struct.pack("!BBH", 0, 6, len(segment)) + bytes(segment)
    if len(data) % 2:
        data += b"\0"
    total_sum = sum(struct.unpack("!%dH" % (len(data) // 2), data))
    while total_sum >> 16:
        total_sum = (total_sum & 0xFFFF) + (total_sum >> 16)
    packet[ihl + 16:ihl + 18] = struct.pack("!H", ~total_sum & 0xFFFF)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--iface", required=True)
    ap.add_argument("--server", required=True, help="this server's address (source of the replay)")
    ap.add_argument("--client", default="198.18.1.2")
    ap.add_argument("--merge-ttl", type=int, default=2)
    ap.add_argument("--period", type=float, default=1.05)
    ap.add_argument("--min-payload", type=int, default=1000)
    args = ap.parse_args()

    stop = [False]

    def on_signal(*_):
        stop[0] = True

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)

    sniff = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(ETH_P_ALL))
    sniff.bind((args.iface, 0))
    raw = socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_RAW)
    raw.setsockopt(socket.IPPROTO_IP, socket.IP_HDRINCL, 1)
    icmp = socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_ICMP)
    udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    udp.setsockopt(socket.IPPROTO_IP, socket.IP_TTL, args.merge_ttl)
    udp.bind((args.server, 0))
    udp_path = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    udp_path.bind((args.server, 0))
    server = socket.inet_aton(args.server)

    out = open(args.out, "w", buffering=1)
    latest = None  # (time, bytearray of the IP packet)
    latest_ttl = [64]
    pending = {}  # key -> (kind, sent time)
    next_probe = time.monotonic() + args.period
    ident = os.getpid() & 0xFF00
    counter = 0
    turn = 0
    start = time.monotonic()
    while not stop[0]:
        now = time.monotonic()
        timeout = max(0.0, min(next_probe - now, 0.05))
        try:
            ready, _, _ = select.select([sniff, icmp], [], [], timeout)
        except InterruptedError:
            continue
        now = time.monotonic()
        if sniff in ready:
            for _ in range(256):
                try:
                    frame, addr = sniff.recvfrom(65535, socket.MSG_DONTWAIT)
                except BlockingIOError:
                    break
                if len(frame) < 14 + 40 or struct.unpack("!H", frame[12:14])[0] != 0x0800:
                    continue
                ip = frame[14:]
                if ip[9] != 6:
                    continue
                ihl = (ip[0] & 0x0F) * 4
                total = struct.unpack("!H", ip[2:4])[0]
                doff = (ip[ihl + 12] >> 4) * 4
                if addr[2] == PACKET_OUTGOING and ip[12:16] == server:
                    if total - ihl - doff >= args.min_payload:
                        latest = (now, bytearray(ip[:total]))
                        latest_ttl[0] = ip[8]
                elif addr[2] == PACKET_HOST and ip[16:20] == server and doff > 20:
                    # The client's answer to a full-path copy: a duplicate ACK whose first SACK block (D-SACK,
                    # RFC 2883) names the duplicate's sequence range.
                    sport, dport = struct.unpack("!HH", ip[ihl:ihl + 4])
                    options = ip[ihl + 20:ihl + doff]
                    i = 0
                    while i < len(options):
                        kind = options[i]
                        if kind == 0:
                            break
                        if kind == 1:
                            i += 1
                            continue
                        if i + 1 >= len(options) or options[i + 1] < 2:
                            break
                        length = options[i + 1]
                        if kind == 5 and length >= 10:
                            left = struct.unpack("!I", options[i + 2:i + 6])[0]
                            key = ("flowpath", dport, sport, left)
                            if key in pending:
                                kind_name, sent = pending.pop(key)
                                out.write(json.dumps({"t": round(sent - start, 4), "kind": kind_name, "ttl": None,
                                                      "rtt_ms": round((now - sent) * 1000, 3),
                                                      "from": socket.inet_ntoa(ip[12:16])}) + "\n")
                        i += length
        if icmp in ready:
            for _ in range(64):
                try:
                    data, src = icmp.recvfrom(65535, socket.MSG_DONTWAIT)
                except BlockingIOError:
                    break
                ihl = (data[0] & 0x0F) * 4
                if len(data) < ihl + 8 + 20 or data[ihl] not in (3, 11):
                    continue
                quoted = data[ihl + 8:]
                qihl = (quoted[0] & 0x0F) * 4
                if data[ihl] == 3:
                    # The full-path baseline: port unreachable from the client, matched by the quoted UDP port.
                    if quoted[9] != 17 or len(quoted) < qihl + 4:
                        continue
                    key = ("basepath-port", struct.unpack("!H", quoted[qihl + 2:qihl + 4])[0])
                elif quoted[9] == 17 and len(quoted) >= qihl + 4:
                    # The baseline: matched by the quoted UDP destination port.
                    key = ("base-port", struct.unpack("!H", quoted[qihl + 2:qihl + 4])[0])
                else:
                    key = ("flow", struct.unpack("!H", quoted[4:6])[0])
                if key in pending:
                    kind, sent = pending.pop(key)
                    out.write(json.dumps({"t": round(sent - start, 4), "kind": kind,
                                          "ttl": None if kind == "basepath" else args.merge_ttl,
                                          "rtt_ms": round((now - sent) * 1000, 3), "from": src[0]}) + "\n")
        if now >= next_probe:
            next_probe = now + args.period
            turn += 1
            counter = (counter + 1) & 0xFF
            ip_id = ident | counter
            if turn % 3 != 0:
                if latest is not None and now - latest[0] < 0.2:
                    packet = latest[1]
                    packet[8] = args.merge_ttl
                    packet[4:6] = struct.pack("!H", ip_id)
                    packet[10:12] = b"\0\0"  # the kernel fills the header checksum (IP_HDRINCL)
                    tcp_checksum(packet)
                    dst = socket.inet_ntoa(bytes(packet[16:20]))
                    try:
                        raw.sendto(bytes(packet), (dst, 0))
                        pending[("flow", ip_id)] = ("flow", now)
                    except OSError:
                        pass
                    # The full-path copy: the segment again with its own TTL; it reaches the client as a duplicate,
                    # which the client acknowledges at once with a D-SACK naming it.
                    full = bytearray(latest[1])
                    full[8] = latest_ttl[0]
                    full[4:6] = struct.pack("!H", ip_id ^ 0x80)
                    full[10:12] = b"\0\0"
                    ihl = (full[0] & 0x0F) * 4
                    sport, dport, seq = struct.unpack("!HHI", full[ihl:ihl + 8])
                    try:
                        raw.sendto(bytes(full), (dst, 0))
                        pending[("flowpath", sport, dport, seq)] = ("flowpath", now)
                    except OSError:
                        pass
            else:
                # Out-of-flow baseline: an unclassified UDP datagram to the client with the same TTL, matched by
                # its destination port (one of 64, reused only after 200 s).
                port = 33434 + (turn // 3) % 64
                try:
                    udp.sendto(b"wehey-probe", (args.client, port))
                    pending[("base-port", port)] = ("base", now)
                except OSError:
                    pass
                # The full-path baseline: a datagram to a closed port of the client (ICMP port unreachable).
                port = 33600 + (turn // 3) % 64
                try:
                    udp_path.sendto(b"wehey-probe", (args.client, port))
                    pending[("basepath-port", port)] = ("basepath", now)
                except OSError:
                    pass
        # Expire unanswered probes after 2 s (recorded with rtt_ms null).
        for key, (kind, sent) in list(pending.items()):
            if now - sent > 2.0:
                del pending[key]
                out.write(json.dumps({"t": round(sent - start, 4), "kind": kind,
                                      "ttl": args.merge_ttl if kind in ("flow", "base") else None,
                                      "rtt_ms": None, "from": None}) + "\n")
    out.close()


if __name__ == "__main__":
    main()
