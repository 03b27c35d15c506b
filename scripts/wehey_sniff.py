#!/usr/bin/env python3
"""wehey_sniff.py - the client's view of WeHeY's simultaneous replays, for the blind-spot prototype.
Run as root inside the client namespace of the Y testbed:

    ip netns exec <TB>c python3 scripts/wehey_sniff.py --out arrivals.csv --iface c0

Writes one CSV line per incoming TCP data segment: arrival time (s, monotonic from start), source address, source
port, destination port, sequence number, payload length. Stops on SIGTERM/SIGINT. Passive: it reads a copy of the
packets (AF_PACKET) and changes nothing.
"""
import argparse
import signal
import socket
import struct
import time

ETH_P_ALL = 0x0003
PACKET_HOST = 0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--iface", required=True)
    args = ap.parse_args()
    stop = [False]

    def on_signal(*_):
        stop[0] = True

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    sniff = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(ETH_P_ALL))
    sniff.bind((args.iface, 0))
    sniff.settimeout(0.2)
    sniff.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 8 << 20)
    start = time.monotonic()
    with open(args.out, "w") as out:
        out.write("t,src,sport,dport,seq,len\n")
        while not stop[0]:
            try:
                frame, addr = sniff.recvfrom(256)
            except (socket.timeout, InterruptedError):
                continue
            now = time.monotonic() - start
            if addr[2] != PACKET_HOST or len(frame) < 14 + 40 or frame[12:14] != b"\x08\x00":
                continue
            ip = frame[14:]
            if ip[9] != 6:
                continue
            ihl = (ip[0] & 0x0F) * 4
            total = struct.unpack("!H", ip[2:4])[0]
            sport, dport, seq = struct.unpack("!HHI", ip[ihl:ihl + 8])
            doff = (ip[ihl + 12] >> 4) * 4
            length = total - ihl - doff
            if length <= 0:
                continue
            out.write(f"{now:.6f},{socket.inet_ntoa(ip[12:16])},{sport},{dport},{seq},{length}\n")


if __name__ == "__main__":
    main()
