"""SIGTERM while a real test's last replay runs: the analyzer must answer through the drain.

The suite's server is shared by every case, so this one starts its own short-lived wehe-server (the same binary and
certificates, default limits, a 25 s grace period), runs `wehe run tinyweb` against it, and sends SIGTERM as soon as
the test's second side channel (its last replay) is admitted. During the drain `/healthz` must answer 503
`{"status": "draining"}`, the test must pass (its analysis requested and its result fetched during the drain), and
the server must exit 0 before the grace period is over.
"""
import os, re, signal, subprocess, time

import suite


def get(port, path):
    try:
        return suite.http(port, "GET %s HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n" % path, timeout=3)
    except OSError:
        return 0, b""


def run():
    work = suite.WORK
    binary = os.environ.get("BIN", ".build/debug")
    data = os.path.join(work, "drain")
    os.makedirs(data, exist_ok=True)
    out = open(os.path.join(data, "server.out"), "w")
    log = open(os.path.join(data, "server.log"), "w")
    server = subprocess.Popen(
        [binary + "/wehe-server", "serve", "--replays", "Fixtures/replays", "--data", os.path.join(data, "server"),
         "--bind", "127.0.0.1", "--ephemeral-replay-ports", "--side-channel-port", "0",
         "--side-channel-plain-port", "0", "--analyzer-port", "0", "--analyzer-plain-port", "0",
         "--tls-cert", work + "/certs/server.crt", "--tls-key", work + "/certs/server.key",
         "--grace-period", "25", "--log-level", "notice"],
        stdout=out, stderr=log)
    try:
        ports = None
        for _ in range(300):
            text = open(os.path.join(data, "server.out")).read()
            match = re.search(r"wehe-server: listening.*", text)
            if match:
                ports = dict(re.findall(r" ([a-z-]+)=(\d+)", match.group(0)))
                break
            if server.poll() is not None:
                break
            time.sleep(0.1)
        if not ports:
            suite.expect(False, "the drain case's own server started")
            return
        side, analyzer_tls, analyzer = ports["side-channel-tls"], ports["analyzer-tls"], int(ports["analyzer"])
        client = subprocess.Popen(
            [binary + "/wehe", "run", "tinyweb", "--server", "127.0.0.1", "--side-channel-port", side,
             "--analyzer-port", analyzer_tls, "--cert", work + "/certs/ca.crt", "--replays", "Fixtures/replays",
             "--data-dir", os.path.join(data, "client"), "--accept-consent", "--no-confirmation", "--json"],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        # SIGTERM once the second side channel (the last replay) is admitted.
        granted = 0
        deadline = time.time() + 60
        while time.time() < deadline and client.poll() is None:
            _, body = get(analyzer, "/metrics")
            match = re.search(rb'wehe_admissions_total\{result="granted"\} (\d+)', body)
            granted = int(match.group(1)) if match else 0
            if granted >= 2:
                break
            time.sleep(0.05)
        suite.expect(granted >= 2, "the real test's last replay was admitted before SIGTERM (%d grants)" % granted)
        sent = time.time()
        server.send_signal(signal.SIGTERM)
        health = (0, b"")
        for _ in range(40):
            health = get(analyzer, "/healthz")
            if health[0] == 503:
                break
            time.sleep(0.05)
        body = health[1].partition(b"\r\n\r\n")[2]
        suite.expect(health[0] == 503 and body == b'{"status": "draining"}',
                     "during the drain /healthz answers HTTP %d %s" % (health[0], body.decode(errors="replace")))
        try:
            stdout, stderr = client.communicate(timeout=60)
        except subprocess.TimeoutExpired:
            client.kill()
            stdout, stderr = client.communicate()
        finished = time.time() - sent
        last = (stderr.decode(errors="replace").strip().splitlines() or [""])[-1]
        suite.expect(client.returncode == 0, "the real test whose replay ended in the drain passed (exit %d%s), "
                     "%.1f s after SIGTERM" % (client.returncode, "" if client.returncode == 0 else ": " + last,
                                               finished))
        try:
            status = server.wait(timeout=40)
        except subprocess.TimeoutExpired:
            server.kill()
            status = server.wait()
        stopped = time.time() - sent
        suite.expect(status == 0 and stopped < 25 + 5,
                     "the server exited %d, %.1f s after SIGTERM (grace period 25 s)" % (status, stopped))
    finally:
        if server.poll() is None:
            server.kill()
            server.wait()
