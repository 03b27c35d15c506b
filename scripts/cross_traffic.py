#!/usr/bin/env python3
"""cross_traffic.py - background TCP traffic for the kernel testbed's shared-bottleneck conditions (stdlib only).

    cross_traffic.py sink --port 5201                                   (client namespace: read and discard)
    cross_traffic.py source --host 198.18.1.2 --port 5201 --pattern constant --rate-mbit 30
    cross_traffic.py source --host 198.18.1.2 --port 5201 --pattern onoff --on 1.5 --off 1.5
    cross_traffic.py source --host 198.18.1.2 --port 5201 --pattern heavy --flows 4

Patterns (server to client, i.e. through the shaped download direction of the access link):
  constant  one flow paced at --rate-mbit (application-level pacing, 10 ms slots)
  onoff     one flow at full speed for --on seconds, silent for --off seconds, repeated (random start phase)
  heavy     --flows parallel flows at full speed
Runs until killed; a lost connection is reopened after 0.2 s.
"""
import argparse
import random
import socket
import threading
import time

CHUNK = b"\x5a" * 65536


def sink(port):
    server = socket.socket(socket.AF_INET6, socket.SOCK_STREAM)
    server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    server.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 0)
    server.bind(("::", port))
    server.listen(64)

    def drain(connection):
        with connection:
            while connection.recv(1 << 20):
                pass

    while True:
        connection, _ = server.accept()
        threading.Thread(target=drain, args=(connection,), daemon=True).start()


def connect(host, port):
    while True:
        try:
            return socket.create_connection((host, port), timeout=5)
        except OSError:
            time.sleep(0.2)


def flow(host, port, pattern, rate_mbit, on, off):
    while True:
        connection = connect(host, port)
        connection.settimeout(None)
        try:
            if pattern == "constant":
                per_slot = max(1, int(rate_mbit * 1e6 / 8 / 100))
                next_slot = time.monotonic()
                while True:
                    connection.sendall(CHUNK[:per_slot] if per_slot <= len(CHUNK) else CHUNK * (per_slot // len(CHUNK)))
                    next_slot += 0.01
                    time.sleep(max(0.0, next_slot - time.monotonic()))
            elif pattern == "onoff":
                time.sleep(random.uniform(0, on + off))
                while True:
                    end = time.monotonic() + on
                    while time.monotonic() < end:
                        connection.sendall(CHUNK[:16384])
                    time.sleep(off)
            else:
                while True:
                    connection.sendall(CHUNK)
        except OSError:
            connection.close()
            time.sleep(0.2)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("role", choices=["sink", "source"])
    parser.add_argument("--host", default="198.18.1.2")
    parser.add_argument("--port", type=int, default=5201)
    parser.add_argument("--pattern", choices=["constant", "onoff", "heavy"], default="constant")
    parser.add_argument("--rate-mbit", type=float, default=30.0)
    parser.add_argument("--on", type=float, default=1.5)
    parser.add_argument("--off", type=float, default=1.5)
    parser.add_argument("--flows", type=int, default=4)
    args = parser.parse_args()
    if args.role == "sink":
        sink(args.port)
        return
    count = args.flows if args.pattern == "heavy" else 1
    threads = [threading.Thread(target=flow, args=(args.host, args.port, args.pattern, args.rate_mbit, args.on,
                                                    args.off), daemon=True) for _ in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()


if __name__ == "__main__":
    main()
