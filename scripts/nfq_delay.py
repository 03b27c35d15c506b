#!/usr/bin/env python3
"""nfq_delay.py - hold packets queued by an iptables NFQUEUE rule for a fixed time (and drop some at random).

The test kernel has no netem qdisc, so testbed.sh adds delay in userspace: it queues every packet towards the
client with `-j NFQUEUE --queue-num 0 --queue-bypass` and runs this program, which answers each queued packet
with an ACCEPT verdict DELAY milliseconds after it arrived (or a DROP with probability LOSS). It speaks the
nfnetlink_queue protocol directly, so it needs only the Python standard library. Root only.

    nfq_delay.py --queue 0 --delay-ms 30 [--loss 0.01] [--seed 1]
"""
import argparse
import heapq
import random
import select
import signal
import socket
import struct
import sys
import time

NETLINK_NETFILTER = 12
QUEUE_SUBSYSTEM = 3 << 8
MSG_PACKET, MSG_VERDICT, MSG_CONFIG = 0, 1, 2
CFG_CMD, CFG_PARAMS, CFG_QUEUE_MAXLEN = 1, 2, 3
ATTR_PACKET_HEADER, ATTR_VERDICT_HEADER = 1, 2
CMD_BIND = 1
COPY_META = 1  # metadata only: the verdict needs the packet id, not the bytes
DROP, ACCEPT = 0, 1
F_REQUEST, F_ACK = 0x1, 0x4
NLMSG_ERROR = 2


def attribute(kind, payload):
    length = 4 + len(payload)
    return struct.pack("=HH", length, kind) + payload + bytes((4 - length % 4) % 4)


def message(kind, queue, attributes, flags=F_REQUEST, sequence=0):
    # nfgenmsg: family AF_UNSPEC, version 0, resource id = queue number (big endian)
    body = struct.pack("=BBH", socket.AF_UNSPEC, 0, socket.htons(queue)) + b"".join(attributes)
    return struct.pack("=IHHII", 16 + len(body), QUEUE_SUBSYSTEM | kind, flags, sequence, 0) + body


class DelayQueue:
    def __init__(self, queue, delay, loss, seed, maxlen, jitter=0.0):
        self.queue, self.delay, self.loss = queue, delay, loss
        # Jitter: each packet's delay is drawn uniformly in [delay - jitter, delay + jitter], but a packet never
        # leaves before the one queued ahead of it (a FIFO link whose queueing delay varies, no reordering).
        self.jitter, self.last_release = jitter, 0.0
        self.random = random.Random(seed)
        self.pending = []  # heap of (release time, packet id, verdict)
        self.sock = socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, NETLINK_NETFILTER)
        self.sock.bind((0, 0))
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 8 << 20)
        self.configure([attribute(CFG_CMD, struct.pack("!BBH", CMD_BIND, 0, 0))], 1)
        self.configure([attribute(CFG_PARAMS, struct.pack("!IB", 0, COPY_META)),
                        attribute(CFG_QUEUE_MAXLEN, struct.pack("!I", maxlen))], 2)

    def configure(self, attributes, sequence):
        self.sock.send(message(MSG_CONFIG, self.queue, attributes, F_REQUEST | F_ACK, sequence))
        reply = self.sock.recv(65536)
        kind = struct.unpack_from("=H", reply, 4)[0]
        status = struct.unpack_from("=i", reply, 16)[0] if kind == NLMSG_ERROR else 0
        if status:
            sys.exit(f"nfq_delay: configuring queue {self.queue} failed: errno {-status}")

    def receive(self):
        data = self.sock.recv(1 << 20)
        offset = 0
        while offset + 16 <= len(data):
            length, kind = struct.unpack_from("=IH", data, offset)
            if length < 16:
                break
            if kind == QUEUE_SUBSYSTEM | MSG_PACKET:
                packet_id = self.packet_id(data, offset + 20, offset + length)
                if packet_id is not None:
                    verdict = DROP if self.loss and self.random.random() < self.loss else ACCEPT
                    delay = self.delay
                    if self.jitter:
                        delay = max(0.0, delay + self.random.uniform(-self.jitter, self.jitter))
                    release = max(time.monotonic() + delay, self.last_release)
                    self.last_release = release
                    heapq.heappush(self.pending, (release, packet_id, verdict))
            offset += (length + 3) & ~3

    @staticmethod
    def packet_id(data, start, end):
        position = start
        while position + 4 <= end:
            length, kind = struct.unpack_from("=HH", data, position)
            if length < 4:
                return None
            if kind & 0x7FFF == ATTR_PACKET_HEADER:
                return struct.unpack_from("!I", data, position + 4)[0]
            position += (length + 3) & ~3
        return None

    def release_due(self):
        now = time.monotonic()
        while self.pending and self.pending[0][0] <= now:
            _, packet_id, verdict = heapq.heappop(self.pending)
            header = attribute(ATTR_VERDICT_HEADER, struct.pack("!II", verdict, packet_id))
            self.sock.send(message(MSG_VERDICT, self.queue, [header]))

    def run(self):
        while True:
            timeout = max(0.0, self.pending[0][0] - time.monotonic()) if self.pending else 1.0
            readable, _, _ = select.select([self.sock], [], [], timeout)
            if readable:
                self.receive()
            self.release_due()


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--queue", type=int, default=0)
    parser.add_argument("--delay-ms", type=float, default=30.0)
    parser.add_argument("--loss", type=float, default=0.0, help="drop probability in [0, 1)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--jitter-ms", type=float, default=0.0, help="uniform +- jitter of each delay (FIFO kept)")
    parser.add_argument("--maxlen", type=int, default=8192, help="packets the kernel may queue for us")
    args = parser.parse_args()
    if args.delay_ms < 0 or not 0 <= args.loss < 1:
        parser.error("--delay-ms must be >= 0 and --loss within [0, 1)")
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    DelayQueue(args.queue, args.delay_ms / 1000.0, args.loss, args.seed, args.maxlen, args.jitter_ms / 1000.0).run()


if __name__ == "__main__":
    main()
