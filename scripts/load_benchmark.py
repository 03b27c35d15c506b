#!/usr/bin/env python3
"""Load benchmark for wehe-server: N concurrent sessions from distinct loopback addresses.

Starts the built `wehe-server serve` (moved ports, temporary data directory), then for each N runs N concurrent
sessions at once, each a full side-channel exchange over TLS plus one port-test replay (port_853, ~10 MB down, no
timing), and reports successes, wall time, server CPU seconds (utime+stime from /proc/<pid>/stat) and the server's
peak resident memory (VmHWM). Usage:

    python3 scripts/load_benchmark.py --server-bin .build/release/wehe-server --sessions 50 200 500
"""

import argparse
import asyncio
import json
import os
import resource
import ssl
import subprocess
import sys
import tempfile
import time
import urllib.request


def proc_cpu_seconds(pid):
    with open("/proc/%d/stat" % pid) as handle:
        fields = handle.read().rsplit(")", 1)[1].split()
    ticks = os.sysconf("SC_CLK_TCK")
    return (int(fields[11]) + int(fields[12])) / ticks


def proc_memory(pid):
    values = {}
    with open("/proc/%d/status" % pid) as handle:
        for line in handle:
            if line.startswith(("VmHWM:", "VmRSS:")):
                values[line.split(":")[0]] = int(line.split()[1]) * 1024
    return values


async def read_frame(reader):
    prefix = await reader.readexactly(10)
    return (await reader.readexactly(int(prefix))).decode()


def frame(text):
    data = text.encode()
    return b"%010d" % len(data) + data


async def session(index, args, trace, context, source=None, user=None):
    """One full session (side channel over TLS, one replay, samples, result); "ok" or what went wrong."""
    source = source or "127.0.%d.%d" % (1 + index // 250, 2 + index % 250)
    user = user or "@load%05d" % index
    reader, writer = await asyncio.open_connection(
        "127.0.0.1", args.side_port, ssl=context, local_addr=(source, 0), server_hostname=None)
    try:
        writer.write(frame("%s;0;%s;0;%d;False;127.0.0.1;3.3" % (user, trace["name"], 1)))
        writer.write(frame("[-1, null, null]"))
        await writer.drain()
        grant = await read_frame(reader)
        if not grant.startswith("1;"):
            return "refused " + grant
        writer.write(frame("NoIperf") + frame("NoMobileStats"))
        await writer.drain()
        port_map = json.loads(await read_frame(reader))
        await read_frame(reader)
        csp = trace["packets"][0]["c_s_pair"]
        server = csp[csp.rindex("-") + 1:]
        host, port = port_map["tcp"][server[: server.rindex(".")]][server[server.rindex(".") + 1:]]
        r2, w2 = await asyncio.open_connection(host or "127.0.0.1", port, local_addr=(source, 0))
        start = time.monotonic()
        received = 0
        expected = 0
        for packet in trace["packets"]:
            w2.write(bytes.fromhex(packet["payload"]))
            await w2.drain()
            want = packet["response_len"]
            expected += want
            while want > 0:
                chunk = await r2.read(min(262144, want))
                if not chunk:
                    return "replay cut after %d of %d bytes" % (received, expected)
                want -= len(chunk)
                received += len(chunk)
        duration = time.monotonic() - start
        w2.close()
        samples = [[round(received / 125000 / max(duration, 1e-3), 3)] * 3, [0.02, 0.04, 0.06]]
        writer.write(frame("DONE;%r" % duration) + frame(json.dumps(samples)))
        await writer.drain()
        reply = await read_frame(reader)
        if reply != "OK":
            return "no OK: " + reply
        writer.write(frame("Result;No"))
        await writer.drain()
        return "ok"
    except (OSError, asyncio.IncompleteReadError, ValueError, KeyError) as error:
        return "%s: %s" % (type(error).__name__, error)
    finally:
        writer.close()


async def idle_round(count, args, trace, context, pid):
    """Opens `count` silent connections (plain TCP to the TLS side channel: a half-open handshake), runs one normal
    session meanwhile, and reports how many the server closed and the memory it used."""
    sockets = []
    for index in range(count):
        source = "127.0.%d.%d" % (100 + index // 250, 2 + index % 250)
        try:
            reader, writer = await asyncio.open_connection("127.0.0.1", args.side_port, local_addr=(source, 0))
            sockets.append((reader, writer))
        except OSError:
            pass
    await asyncio.sleep(2)
    memory = proc_memory(pid)
    normal = await session(9999, args, trace, context)
    start = time.monotonic()

    async def closed(reader):
        try:
            return await asyncio.wait_for(reader.read(1), timeout=30) == b""
        except (asyncio.TimeoutError, OSError):
            return False

    results = await asyncio.gather(*(closed(r) for r, _ in sockets))
    for _, writer in sockets:
        writer.close()
    return len(sockets), sum(results), time.monotonic() - start, memory, normal


async def run_round(count, args, trace, context):
    started = time.monotonic()
    results = await asyncio.gather(*(session(i, args, trace, context) for i in range(count)))
    elapsed = time.monotonic() - started
    failures = {}
    for result in results:
        if result != "ok":
            failures[result[:60]] = failures.get(result[:60], 0) + 1
    return sum(1 for r in results if r == "ok"), elapsed, failures


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--server-bin", required=True)
    parser.add_argument("--replays", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "../../shared/replays"))
    parser.add_argument("--sessions", type=int, nargs="+", default=[50, 200, 500])
    parser.add_argument("--offset", type=int, default=30000)
    parser.add_argument("--store", default="sqlite")
    parser.add_argument("--trace", default="port_853.pcap_client_all.json")
    parser.add_argument("--idle", type=int, default=0, help="also open this many silent connections")
    parser.add_argument("--server-arg", action="append", default=[],
                        help="an extra option for wehe-server serve (repeat), e.g. --server-arg=--max-sessions=10000")
    args = parser.parse_args()
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    with open(os.path.join(args.replays, args.trace)) as handle:
        q, _, _, name = json.load(handle)
    trace = {"packets": q, "name": name}
    args.side_port = 45556
    work = tempfile.mkdtemp(prefix="wehe-load-")
    subprocess.run([args.server_bin, "certs", "--out", work + "/certs", "--host", "127.0.0.1"], check=True,
                   stdout=subprocess.DEVNULL)
    log = open(work + "/server.log", "w")
    server = subprocess.Popen(
        [args.server_bin, "serve", "--replays", args.replays, "--data", work, "--bind", "127.0.0.1",
         "--port-offset", str(args.offset), "--side-channel-port", str(args.side_port),
         "--side-channel-plain-port", "off", "--analyzer-port", "off", "--analyzer-plain-port", "45565",
         "--tls-cert", work + "/certs/server.crt", "--tls-key", work + "/certs/server.key", "--store", args.store,
         "--log-level", "warning",
         # Every simulated client shares 127.0.0.0/8: lift the per-/24 session cap (default 32).
         "--max-sessions-per-network", "100000"] + args.server_arg,
        stdout=log, stderr=log)
    try:
        for _ in range(300):
            try:
                urllib.request.urlopen("http://127.0.0.1:45565/Results?command=defaultSetting", timeout=1).read()
                break
            except OSError:
                time.sleep(0.2)
        context = ssl.create_default_context(cafile=work + "/certs/ca.crt")
        context.check_hostname = False
        idle = proc_memory(server.pid)
        print("server idle: RSS %.1f MiB" % (idle["VmRSS"] / 1048576))
        print("%8s %9s %9s %10s %12s %14s  %s" % ("sessions", "success", "wall s", "server CPU s", "CPU % (2 cores)",
                                                  "peak RSS MiB", "failures"))
        for count in args.sessions:
            cpu_before = proc_cpu_seconds(server.pid)
            ok, elapsed, failures = asyncio.run(run_round(count, args, trace, context))
            cpu = proc_cpu_seconds(server.pid) - cpu_before
            memory = proc_memory(server.pid)
            print("%8d %9d %9.1f %10.1f %12.0f %14.1f  %s" % (
                count, ok, elapsed, cpu, 100 * cpu / elapsed / 2, memory["VmHWM"] / 1048576,
                failures or "-"), flush=True)
            time.sleep(2)
        if args.idle:
            opened, closed, waited, memory, normal = asyncio.run(idle_round(args.idle, args, trace, context, server.pid))
            print("idle: %d silent connections opened, RSS with them %.1f MiB, %d closed by the server within %.1f s; "
                  "a normal session meanwhile: %s" % (opened, memory["VmRSS"] / 1048576, closed, waited, normal))
    finally:
        server.terminate()
        try:
            server.wait(timeout=40)
        except subprocess.TimeoutExpired:
            server.kill()
        log.close()
        print("server exit status %s; log: %s/server.log" % (server.returncode, work))


if __name__ == "__main__":
    main()
