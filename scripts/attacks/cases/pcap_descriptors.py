"""Packet capture (--pcap) under a low open-file limit, and client-chosen names in capture paths.

Runs its own wehe-server (the suite's shared one has no --pcap) under `prlimit --nofile=1200`, with --pcap. Then:
1. floods the TCP replay ports with idle connections from 200 addresses (no session: they are never claimed) while a
   real test runs against this server; the capture files open at any moment must be those of claimed connections
   (the real test's), the server's descriptors must stay under the limit and no accept may fail;
2. declares sessions whose user id and extraString are hostile (`..`, `.`, shell metacharacters, 300 bytes) and
   starts their replay connection: every capture must land inside the pcap directory, under the reference's layout,
   with names of safe characters, and none may be lost.
"""
import os, re, socket, subprocess, threading, time

import suite

LIMIT = 1200
HELD = 700
BIN = os.environ.get("BIN", ".build/debug")


def listening_ports(pid):
    """TCP ports the process listens on (its socket inodes matched in /proc/net/tcp{,6})."""
    inodes = set()
    for fd in os.listdir("/proc/%d/fd" % pid):
        try:
            link = os.readlink("/proc/%d/fd/%s" % (pid, fd))
        except OSError:
            continue
        if link.startswith("socket:["):
            inodes.add(link[8:-1])
    ports = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        for line in open(table).read().splitlines()[1:]:
            fields = line.split()
            if fields[3] == "0A" and fields[9] in inodes:
                ports.add(int(fields[1].rsplit(":", 1)[1], 16))
    return ports


def descriptors(pid, pcap):
    """(open descriptors, of them files below the pcap directory) of the process."""
    total, captures = 0, 0
    try:
        names = os.listdir("/proc/%d/fd" % pid)
    except OSError:
        return 0, 0
    for fd in names:
        total += 1
        try:
            if os.readlink("/proc/%d/fd/%s" % (pid, fd)).startswith(pcap):
                captures += 1
        except OSError:
            pass
    return total, captures


def real_test(base, ports, label):
    start = time.time()
    result = subprocess.run(
        [BIN + "/wehe", "run", "tinyweb", "--server", "127.0.0.1", "--side-channel-port", str(ports["side-channel-tls"]),
         "--analyzer-port", str(ports["analyzer-tls"]), "--cert", suite.WORK + "/certs/ca.crt", "--replays",
         "Fixtures/replays", "--data-dir", base + "/client", "--accept-consent", "--no-confirmation", "--json"],
        stdout=subprocess.DEVNULL, stderr=open(base + "/client.log", "a"))
    elapsed = time.time() - start
    suite.expect(result.returncode == 0, "real test %s (own --pcap server): exit %d in %.1f s"
                 % (label, result.returncode, elapsed))
    if result.returncode != 0:
        # What the client said, so a failure in CI explains itself.
        for line in open(base + "/client.log", errors="replace").read().splitlines()[-6:]:
            print("        client: " + line)
    return elapsed


def flood(replay_ports, stop, held, opened):
    """Keeps about HELD idle connections open to the replay ports, more than their share of the connection budget
    (the server evicts the oldest and closes the rest at its first-message deadline), opening at most 100 every
    0.5 s; counts what it opened."""
    index = 0
    while not stop.is_set():
        for s in list(held):
            try:
                s.setblocking(False)
                if s.recv(1) == b"":
                    raise OSError("closed")
            except BlockingIOError:
                continue
            except OSError:
                held.remove(s)
                s.close()
        for _ in range(100):
            if len(held) >= HELD or stop.is_set():
                break
            source = "127.0.%d.%d" % (30 + index % 4, 2 + (index // 4) % 50)
            try:
                held.append(suite.connect(replay_ports[index % len(replay_ports)], source=source, timeout=2))
                opened[0] += 1
            except OSError:
                opened[1] += 1
            index += 1
        stop.wait(0.5)


def hostile_session(side, replay_ports, source, user, extra, history):
    """Declares a session (plain side channel) and opens its replay connection, which claims it (and names its
    capture); closes both. Whether the session was admitted."""
    s = suite.connect(side, source=source)
    s.sendall(suite.frame("%s;0;TinyWeb-11212026;%s;%d;False;127.0.0.1;3.3" % (user, extra, history))
              + suite.frame("[-1, null, null]") + suite.frame("NoIperf") + suite.frame("NoMobileStats"))
    data = b""
    deadline = time.time() + 10
    while time.time() < deadline and data.count(b"{") == 0:
        chunk = s.recv(65536)
        if not chunk:
            break
        data += chunk
    admitted = data[10:12] == b"1;"
    if admitted:
        r = suite.connect(replay_ports[0], source=source)
        r.sendall(b"\x16\x03\x01\x00\x05hello")
        # The session must still be open when the server reads these bytes (that claims it and names the capture).
        time.sleep(1)
        r.close()
    s.close()
    return admitted


def run():
    base = suite.WORK + "/pcap-descriptors"
    pcap = base + "/pcap"
    os.makedirs(base, exist_ok=True)
    log = open(base + "/server.log", "w")
    server = subprocess.Popen(
        ["prlimit", "--nofile=%d:%d" % (LIMIT, LIMIT), "--", BIN + "/wehe-server", "serve", "--replays",
         "Fixtures/replays", "--data", base + "/server", "--bind", "127.0.0.1", "--ephemeral-replay-ports",
         "--side-channel-port", "0", "--side-channel-plain-port", "0", "--analyzer-port", "0",
         "--analyzer-plain-port", "0", "--tls-cert", suite.WORK + "/certs/server.crt", "--tls-key",
         suite.WORK + "/certs/server.key", "--pcap", pcap, "--log-level", "warning"],
        stdout=subprocess.PIPE, stderr=log)
    try:
        line = server.stdout.readline().decode()
        ports = dict((k, int(v)) for k, v in re.findall(r"([a-z-]+)=(\d+)", line))
        if "side-channel-tls" not in ports:
            suite.expect(False, "own server started (%r)" % line)
            return
        known = set(ports.values())
        replay_ports = sorted(listening_ports(server.pid) - known)
        suite.say("own server: pid %d, open-file limit %d, --pcap, %d replay ports" % (server.pid, LIMIT,
                                                                                      len(replay_ports)))
        baseline = real_test(base, ports, "baseline")

        # Hostile names: each admitted session's capture must exist, inside the pcap directory, with safe names.
        hostile = [("..", "dots"), (".", "A" * 300), ("@safe00001", "../../x $(id) `id` |&<>*?!'\"\\ ~#"),
                   ("-rf", "-")]
        admitted = 0
        for index, (user, extra) in enumerate(hostile):
            admitted += hostile_session(ports["side-channel"], replay_ports, "127.0.44.%d" % (2 + index), user,
                                        extra, 900 + index)
        day = time.strftime("%Y/%m/%d", time.gmtime())
        files, hostile_files = [], []
        deadline = time.time() + 10
        while time.time() < deadline:
            files = []
            for root, _, names in os.walk(pcap):
                files += [os.path.relpath(os.path.join(root, n), pcap) for n in names if n.endswith(".pcap")]
            files = [f for f in files if not f.startswith(".partial")]
            hostile_files = [f for f in files
                             if any(f.endswith("_%d_0_out.pcap" % (900 + i)) for i in range(len(hostile)))]
            if len(hostile_files) >= admitted:
                break
            time.sleep(0.2)
        suite.say("tried: %d sessions with hostile user ids and extraStrings (%d admitted); captures: %s"
                  % (len(hostile), admitted, hostile_files))
        suite.expect(admitted == len(hostile) and len(hostile_files) == admitted,
                     "%d of %d hostile-named captures written (none lost)" % (len(hostile_files), len(hostile)))
        safe = re.compile(r"^[A-Za-z0-9@._+-]{1,255}$")
        layout = re.compile(r"^replay/%s/[^/]+/tcpdumpsResults/dump_server_[^/]+_out\.pcap$" % day)
        bad = [f for f in files if not layout.match(f)
               or any(not safe.match(part) or part.startswith(".") or part.startswith("-") for part in f.split("/"))]
        suite.expect(not bad, "every capture under replay/<day>/<user>/tcpdumpsResults/ with safe names (bad: %s)"
                     % bad)

        stop = threading.Event()
        held, opened = [], [0, 0]
        peak = [0, 0]
        def sample():
            while not stop.is_set():
                total, captures = descriptors(server.pid, pcap)
                peak[0], peak[1] = max(peak[0], total), max(peak[1], captures)
                stop.wait(0.1)
        threads = [threading.Thread(target=flood, args=(replay_ports, stop, held, opened), daemon=True),
                   threading.Thread(target=sample, daemon=True)]
        for thread in threads:
            thread.start()
        deadline = time.time() + 10
        while len(held) < HELD and time.time() < deadline:
            time.sleep(0.2)
        suite.say("tried: idle connections to the replay ports from 200 addresses, about %d held at once" % HELD)
        loaded = real_test(base, ports, "under the flood")
        stop.set()
        for thread in threads:
            thread.join()
        for s in held:
            s.close()
        suite.say("flood: %d connections opened, %d connects failed; real test %.1f s against %.1f s before"
                  % (opened[0], opened[1], loaded, baseline))
        suite.expect(peak[1] <= 2, "capture files open at once: at most %d (only claimed connections may hold one)"
                     % peak[1])
        suite.expect(peak[0] < LIMIT - 50, "server descriptors: at most %d of %d" % (peak[0], LIMIT))
        accept_failures = open(base + "/server.log").read().count("accept failed")
        suite.expect(accept_failures == 0, "accept failures logged: %d" % accept_failures)

    finally:
        server.terminate()
        try:
            server.wait(timeout=20)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()
