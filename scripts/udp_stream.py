#!/usr/bin/env python3
"""A small UDP streaming app for the kernel testbed's recording case (scripts/e2e-detection.sh record).

serve: waits for a hello datagram naming the service, then sends the sender --kbit of 1200-byte datagrams for
       --seconds (a voice or video call's downstream), while the client's keep-alives arrive.
fetch: sends the hello, a keep-alive every 0.5 s, counts what arrives for --seconds and prints it.

The hello carries the name in clear, as a classifier would see an unencrypted first datagram.
"""
import argparse
import os
import socket
import sys
import threading
import time

DATAGRAM = 1200


def stream(sock, peer, kbit, seconds):
    payload = os.urandom(DATAGRAM)
    interval = DATAGRAM * 8 / (kbit * 1000)
    start = time.monotonic()
    sent = 0
    while time.monotonic() - start < seconds:
        sock.sendto(payload, peer)
        sent += 1
        next_at = start + sent * interval
        delay = next_at - time.monotonic()
        if delay > 0:
            time.sleep(delay)


def serve(args):
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sock.bind(("0.0.0.0", args.port))
    hello = b"HELLO " + args.name.encode()
    while True:
        data, peer = sock.recvfrom(65535)
        if data.startswith(hello):
            threading.Thread(target=stream, args=(sock, peer, args.kbit, args.seconds), daemon=True).start()


def fetch(args):
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sock.settimeout(0.5)
    peer = (args.server, args.port)
    sock.sendto(b"HELLO " + args.name.encode() + b" codec=opus", peer)
    received = 0
    start = time.monotonic()
    last_keepalive = start
    while time.monotonic() - start < args.seconds:
        if time.monotonic() - last_keepalive >= 0.5:
            sock.sendto(b"KEEPALIVE", peer)
            last_keepalive = time.monotonic()
        try:
            data, _ = sock.recvfrom(65535)
            received += len(data)
        except socket.timeout:
            pass
    print(f"udp_stream: received {received} bytes in {args.seconds} s")
    return 0 if received > 0 else 1


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    s = sub.add_parser("serve")
    s.add_argument("--port", type=int, required=True)
    s.add_argument("--name", required=True)
    s.add_argument("--kbit", type=float, default=4000)
    s.add_argument("--seconds", type=float, default=8)
    f = sub.add_parser("fetch")
    f.add_argument("--server", required=True)
    f.add_argument("--port", type=int, required=True)
    f.add_argument("--name", required=True)
    f.add_argument("--seconds", type=float, default=9)
    args = parser.parse_args()
    if args.command == "serve":
        serve(args)
        return 0
    return fetch(args)


if __name__ == "__main__":
    sys.exit(main())
