#!/usr/bin/env python3
"""Hostile-load benchmark for wehe-server: real tests while N hostile connections are held.

Starts the built `wehe-server serve` on 127.0.0.1 (OS-chosen ports, TLS side channel and analyzer, the operator
dashboard behind a token, the default limits: the connection budget is sized to the open-file limit, so raise
`ulimit -n` first), then holds N hostile connections from 127.20.0.0/14, each reopened a few seconds after the server
closes it (after 1 to 3 s):

    idle          silent connections: TLS side channel (a handshake that never starts), analyzer, dashboard
    slow-headers  analyzer requests whose header bytes trickle in, one every 2 s
    trickle       plain side channels trickling a length prefix, one digit every 3 s
    declarations  fake declarations on the plain side channel (an unknown replay, or a known one and then silence)

While they are held it runs, one after the other, `wehe run tinyweb` real tests (the CLI over TLS) and a burst of
scripted sessions (scripts/load_benchmark.py's session: side channel over TLS, one port_8081 replay of 1 MB,
samples, result) from addresses spread over /24s (at most 32 per /24, the default per-network cap), and prints the
real tests passed / tried, the scripted sessions served per second, the hostile connections held, and the server's
peak memory (VmHWM). The same burst runs once before the hostile connections as a baseline. Bounded: the hostile
phase ends after the real tests (a few minutes at most).

    python3 scripts/hostile_benchmark.py --bin .build/release --hostile 10000 --real-tests 10 --sessions 200
"""

import argparse
import asyncio
import json
import os
import random
import re
import resource
import signal
import ssl
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import load_benchmark  # noqa: E402  (its session and /proc readers)

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
KINDS = ["idle", "slow-headers", "trickle", "declarations"]


def frame(text):
    return load_benchmark.frame(text)


class Hostiles:
    """N connections, each a coroutine that opens its connection, behaves, and reopens once the server closed it."""

    def __init__(self, count, ports, seed=14):
        self.ports = ports
        self.stop = asyncio.Event()
        self.open = {kind: 0 for kind in KINDS}
        self.opened = {kind: 0 for kind in KINDS}
        self.closed_by_server = {kind: 0 for kind in KINDS}
        self.connect_failures = 0
        self.rng = random.Random(seed)
        # 40 % idle (side TLS, analyzer, dashboard), 20 % each of the others.
        self.plan = []
        for index in range(count):
            share = index % 10
            kind = "idle" if share < 4 else KINDS[1 + (share - 4) // 2]
            self.plan.append((kind, index))

    def target(self, kind, index):
        if kind == "idle":
            return (self.ports["side_tls"], self.ports["analyzer"], self.ports["dashboard"])[index % 3]
        if kind == "slow-headers":
            return self.ports["analyzer"]
        return self.ports["side"]

    async def slot(self, kind, index):
        # Kind k from 127.(20+k).0.0/16; 250 addresses per /24.
        source = "127.%d.%d.%d" % (20 + KINDS.index(kind), (index // 250) % 250, 2 + index % 250)
        port = self.target(kind, index)
        await asyncio.sleep(self.rng.uniform(0, 5))  # ramp
        while not self.stop.is_set():
            try:
                reader, writer = await asyncio.wait_for(
                    asyncio.open_connection("127.0.0.1", port, local_addr=(source, 0)), timeout=10)
            except (OSError, asyncio.TimeoutError):
                self.connect_failures += 1
                await self.pause(1, 3)
                continue
            self.open[kind] += 1
            self.opened[kind] += 1
            try:
                if await self.behave(kind, index, reader, writer):
                    self.closed_by_server[kind] += 1
            except (OSError, asyncio.IncompleteReadError):
                self.closed_by_server[kind] += 1
            finally:
                self.open[kind] -= 1
                writer.close()
            await self.pause(1, 3)

    async def pause(self, low, high):
        try:
            await asyncio.wait_for(self.stop.wait(), timeout=self.rng.uniform(low, high))
        except asyncio.TimeoutError:
            pass

    async def closed(self, reader, seconds):
        """True when the server closed the connection within `seconds` (data is read and dropped)."""
        try:
            end = time.monotonic() + seconds
            while True:
                left = end - time.monotonic()
                if left <= 0:
                    return False
                if not await asyncio.wait_for(reader.read(4096), timeout=left):
                    return True
        except asyncio.TimeoutError:
            return False

    async def behave(self, kind, index, reader, writer):
        """Returns True when the server closed the connection, False when the benchmark stopped first."""
        if kind == "slow-headers":
            writer.write(b"GET /Results?command=defaultSetting HTTP/1.1\r\n")
        elif kind == "declarations":
            replay = "NoSuch-01012030" if index % 2 else "TinyWeb-11212026"
            writer.write(frame("@h%07d;0;%s;0;1;False;127.0.0.1;3.3" % (index, replay)) + frame("[-1, null, null]"))
        while not self.stop.is_set():
            if kind == "slow-headers":
                writer.write(b"X")
                period = 2
            elif kind == "trickle":
                writer.write(b"0")
                period = 3
            else:
                period = 5
            await writer.drain()
            if await self.closed(reader, period):
                return True
        return False

    def held(self):
        return sum(self.open.values())


def server_descriptors(pid):
    try:
        return len(os.listdir("/proc/%d/fd" % pid))
    except OSError:
        return -1


def start_server(args, work):
    subprocess.run([os.path.join(args.bin, "wehe-server"), "certs", "--out", work + "/certs", "--host", "127.0.0.1"],
                   check=True, stdout=subprocess.DEVNULL)
    with open(work + "/operator.token", "w") as handle:
        handle.write("%032x\n" % random.getrandbits(128))
    out = open(work + "/server.out", "w")
    log = open(work + "/server.log", "w")
    server = subprocess.Popen(
        [os.path.join(args.bin, "wehe-server"), "serve", "--replays", args.replays, "--data", work + "/server",
         "--bind", "127.0.0.1", "--ephemeral-replay-ports", "--side-channel-port", "0", "--side-channel-plain-port",
         "0", "--analyzer-port", "0", "--analyzer-plain-port", "0", "--tls-cert", work + "/certs/server.crt",
         "--tls-key", work + "/certs/server.key", "--dashboard-port", "0", "--dashboard-token-file",
         work + "/operator.token", "--log-level", "warning"] + args.server_arg,
        stdout=out, stderr=log)
    for _ in range(600):
        text = open(work + "/server.out").read()
        if "wehe-server: listening" in text and "operator dashboard" in text:
            break
        if server.poll() is not None:
            sys.exit("wehe-server exited: " + open(work + "/server.log").read()[-2000:])
        time.sleep(0.1)
    else:
        server.kill()
        sys.exit("wehe-server did not start")
    line = [entry for entry in text.splitlines() if "wehe-server: listening" in entry][0]

    def port(name):
        return int(re.search(r" %s=(\d+)" % name, line).group(1))

    ports = {"side_tls": port("side-channel-tls"), "side": port("side-channel"),
             "analyzer_tls": port("analyzer-tls"), "analyzer": port("analyzer"),
             "dashboard": int(re.search(r"operator dashboard http://127.0.0.1:(\d+)/", text).group(1))}
    return server, ports


async def real_test(args, work, ports, number):
    """One `wehe run tinyweb` against the server over TLS; (passed, seconds, last line of its error output)."""
    start = time.monotonic()
    process = await asyncio.create_subprocess_exec(
        os.path.join(args.bin, "wehe"), "run", "tinyweb", "--server", "127.0.0.1",
        "--side-channel-port", str(ports["side_tls"]), "--analyzer-port", str(ports["analyzer_tls"]),
        "--cert", work + "/certs/ca.crt", "--replays", args.replays, "--data-dir", work + "/client",
        "--accept-consent", "--no-confirmation", "--json",
        stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.PIPE)
    try:
        _, error = await asyncio.wait_for(process.communicate(), timeout=300)
    except asyncio.TimeoutError:
        process.kill()
        await process.wait()
        return False, time.monotonic() - start, "timed out after 300 s"
    lines = error.decode(errors="replace").strip().splitlines()
    return process.returncode == 0, time.monotonic() - start, (lines[-1] if lines else "")


async def burst(args, ports, trace, context, count, offset):
    """`count` scripted sessions at once, from addresses spread over /24s (32 each); (ok, seconds, failures)."""
    session_args = argparse.Namespace(side_port=ports["side_tls"])

    async def one(index):
        number = offset + index
        source = "127.%d.%d.%d" % (100 + number // 8000, (number // 32) % 250, 2 + number % 32)
        try:
            return await asyncio.wait_for(
                load_benchmark.session(number, session_args, trace, context, source=source,
                                       user="@s%07d" % number), timeout=180)
        except asyncio.TimeoutError:
            return "timed out after 180 s"

    start = time.monotonic()
    results = await asyncio.gather(*(one(index) for index in range(count)))
    elapsed = time.monotonic() - start
    failures = {}
    for result in results:
        if result != "ok":
            failures[result[:60]] = failures.get(result[:60], 0) + 1
    return sum(1 for result in results if result == "ok"), elapsed, failures


async def benchmark(args, work, server, ports):
    with open(os.path.join(args.replays, args.trace)) as handle:
        packets, _, _, name = json.load(handle)
    trace = {"packets": packets, "name": name}
    context = ssl.create_default_context(cafile=work + "/certs/ca.crt")
    context.check_hostname = False
    pid = server.pid
    print("wehe-server %s (pid %d): %s" % (args.bin, pid, ports), flush=True)
    files = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
    print("server at start: RSS %.1f MiB, %d descriptors; open-file limit %d (connection budget: the smaller of "
          "--max-connections, 4096 by default, and the limit less 128)" % (
              load_benchmark.proc_memory(pid)["VmRSS"] / 1048576, server_descriptors(pid), files), flush=True)

    # Baseline: the burst without hostile connections (also makes the client's settings for the real tests).
    ok, elapsed, failures = await burst(args, ports, trace, context, args.sessions, 0)
    print("baseline: %d/%d scripted sessions in %.1f s = %.1f sessions/s; failures %s" % (
        ok, args.sessions, elapsed, ok / elapsed, failures or "-"), flush=True)
    passed, seconds, detail = await real_test(args, work, ports, 0)
    print("baseline: wehe run tinyweb %s in %.1f s %s" % ("passed" if passed else "FAILED", seconds, detail),
          flush=True)

    hostiles = Hostiles(args.hostile, ports)
    tasks = [asyncio.create_task(hostiles.slot(kind, index)) for kind, index in hostiles.plan]
    ramp_start = time.monotonic()
    while time.monotonic() - ramp_start < args.ramp and hostiles.held() < 0.95 * args.hostile:
        await asyncio.sleep(0.5)
    print("hostile: %d of %d connections open after %.1f s (%s)" % (
        hostiles.held(), args.hostile, time.monotonic() - ramp_start, hostiles.open), flush=True)

    samples = []

    async def sample():
        while True:
            memory = load_benchmark.proc_memory(pid)
            samples.append((hostiles.held(), server_descriptors(pid), memory["VmRSS"]))
            await asyncio.sleep(1)

    sampler = asyncio.create_task(sample())
    passed_count = 0
    tried = 0
    real_start = time.monotonic()
    for number in range(1, args.real_tests + 1):
        passed, seconds, detail = await real_test(args, work, ports, number)
        tried += 1
        passed_count += passed
        print("  real test %d: %s in %.1f s (hostile open: %d, server descriptors: %d) %s" % (
            number, "passed" if passed else "FAILED", seconds, hostiles.held(), server_descriptors(pid),
            "" if passed else detail), flush=True)
    real_seconds = time.monotonic() - real_start
    ok, elapsed, failures = await burst(args, ports, trace, context, args.sessions, args.sessions)
    print("  burst: %d/%d scripted sessions in %.1f s = %.1f sessions/s; failures %s" % (
        ok, args.sessions, elapsed, ok / elapsed, failures or "-"), flush=True)
    sampler.cancel()
    hostiles.stop.set()
    await asyncio.gather(*tasks, return_exceptions=True)

    memory = load_benchmark.proc_memory(pid)
    held = [entry[0] for entry in samples] or [0]
    descriptors = [entry[1] for entry in samples] or [0]
    print("hostile connections opened: %s; closed by the server: %s; failed connects: %d" % (
        hostiles.opened, hostiles.closed_by_server, hostiles.connect_failures))
    print("hostile connections open during the real tests: min %d, mean %d, max %d (of %d); server descriptors max %d"
          % (min(held), sum(held) // len(held), max(held), args.hostile, max(descriptors)))
    print("RESULT real tests passed %d/%d under %d hostile connections (%.0f s); scripted sessions %d/%d at %.1f/s; "
          "server peak memory (VmHWM) %.1f MiB" % (
              passed_count, tried, args.hostile, real_seconds, ok, args.sessions, ok / elapsed,
              memory["VmHWM"] / 1048576), flush=True)
    return passed_count == tried and ok == args.sessions


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--bin", default=os.path.join(ROOT, ".build/release"))
    parser.add_argument("--replays", default=os.path.join(ROOT, "Fixtures/replays"))
    parser.add_argument("--trace", default="port_8081.pcap_client_all.json", help="the scripted sessions' replay")
    parser.add_argument("--hostile", type=int, default=10000)
    parser.add_argument("--real-tests", type=int, default=10)
    parser.add_argument("--sessions", type=int, default=200, help="scripted sessions per burst")
    parser.add_argument("--ramp", type=float, default=20, help="longest wait for the hostile connections, seconds")
    parser.add_argument("--server-arg", action="append", default=[], help="an extra option for wehe-server serve")
    args = parser.parse_args()
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    if hard < args.hostile + 1000:
        sys.exit("the open-file limit (%d) is too low for %d connections: raise ulimit -n" % (hard, args.hostile))
    work = tempfile.mkdtemp(prefix="wehe-hostile-")
    server, ports = start_server(args, work)

    def stopped(*_):
        # Stopped (timeout, kill): the server goes too, at once (unwinding 10 000 connection tasks takes long).
        server.kill()
        os._exit(143)

    signal.signal(signal.SIGTERM, stopped)
    try:
        good = asyncio.run(benchmark(args, work, server, ports))
    finally:
        server.terminate()
        try:
            server.wait(timeout=40)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()
    warnings = sum(1 for line in open(work + "/server.log", errors="replace")
                   if re.search(r"warning|error|critical", line))
    print("server exit status %s; %d warning/error lines; log %s/server.log" % (server.returncode, warnings, work))
    sys.exit(0 if good else 1)


if __name__ == "__main__":
    main()
