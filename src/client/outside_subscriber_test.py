#!/usr/bin/env python3
"""Subscribes to `weir serve` with clients that contain no Weir code.

Debian's python3-websocket (the library behind `wsdump`) subscribes with offset=0 and checks the
greeting and every frame byte for byte against what was produced, then a live message, then a
refusal's close code and reason; `wsdump` and (when installed) `wscat` are run as subscribers.
Last, `weir consume --server --cursor` is checked against the same server.

Usage: outside_subscriber_test.py WEIR_BINARY
"""
import json
import os
import re
import select
import shutil
import struct
import subprocess
import sys
import tempfile
import time
import urllib.request

import websocket  # python3-websocket

VALUES = [
    '{"n": %d, "text": "spaces  kept", "nested": {"a": [1, 2.5, null, true]}}' % i
    for i in range(40)
] + ['{"unicode": "\u00fc\u4e2d\U0001F600", "escaped": "quote \\" backslash \\\\"}', '"a string"',
     '12345', '[]']


def fail(message):
    print("FAIL: " + message)
    sys.exit(1)


def check(condition, message):
    if not condition:
        fail(message)


def start_server(weir, data_dir):
    server = subprocess.Popen(
        [weir, "serve", "--data-dir", data_dir, "--listen", "127.0.0.1:0"],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    deadline = time.time() + 20
    seen = ""
    while time.time() < deadline:
        ready, _, _ = select.select([server.stdout], [], [], 0.5)
        if not ready:
            continue
        line = server.stdout.readline()
        if not line:
            break
        seen += line
        match = re.search(r"127\.0\.0\.1:(\d+)", line)
        if match and int(match.group(1)) != 0:
            return server, int(match.group(1))
    server.kill()
    fail("weir serve did not say where it listens: " + repr(seen))


def close_of(ws):
    """The code and reason of the close frame that ends a refused subscription."""
    opcode, frame = ws.recv_data_frame(control_frame=True)
    check(opcode == websocket.ABNF.OPCODE_CLOSE, "expected a close frame, got opcode %d" % opcode)
    return struct.unpack("!H", frame.data[:2])[0], frame.data[2:].decode()


def run_cli(argv, seconds, env=None):
    """Runs a subscriber CLI for `seconds` with stdin held open, returns its stdout lines."""
    holder = subprocess.Popen(["sleep", str(seconds + 2)], stdout=subprocess.PIPE)
    try:
        out = subprocess.run(["timeout", str(seconds)] + argv, stdin=holder.stdout,
                             capture_output=True, text=True, env=env).stdout
    finally:
        holder.kill()
        holder.wait()
    return [line for line in out.splitlines() if line.strip()]


def main():
    weir = sys.argv[1]
    data_dir = tempfile.mkdtemp(prefix="weir-outside-")
    server = None
    try:
        subprocess.run([weir, "topics", "create", "t", "--data-dir", data_dir], check=True,
                       capture_output=True)
        subprocess.run([weir, "produce", "t", "--data-dir", data_dir], check=True,
                       input="\n".join(VALUES) + "\n", capture_output=True, text=True)
        server, port = start_server(weir, data_dir)
        base = "ws://127.0.0.1:%d" % port

        # Replay from 0: the greeting, then [OFFSET,MESSAGE] with MESSAGE the produced bytes.
        ws = websocket.create_connection(base + "/streams/t?offset=0", timeout=10)
        greeting = json.loads(ws.recv())
        expected = {"type": "greeting", "topic": "t", "partition": 0, "first": 0,
                    "next": len(VALUES), "start": 0}
        for key, value in expected.items():
            check(greeting.get(key) == value, "greeting %r: %r != %r" % (key, greeting.get(key),
                                                                        value))
        check(isinstance(greeting.get("max_replay"), int) and
              isinstance(greeting.get("max_backlog"), int), "greeting limits: %r" % greeting)
        for offset, value in enumerate(VALUES):
            frame = ws.recv()
            check(frame == "[%d,%s]" % (offset, value),
                  "frame %d: %r, expected %r" % (offset, frame, "[%d,%s]" % (offset, value)))
            check(json.loads(frame)[0] == offset, "frame %d is not JSON [offset, value]" % offset)

        # Live: a message published now arrives next, on the same connection.
        live = '{"live": true}'
        request = urllib.request.Request("http://127.0.0.1:%d/publish/t" % port,
                                         data=live.encode(), method="POST")
        answer = json.loads(urllib.request.urlopen(request, timeout=10).read())
        check(answer == {"first": len(VALUES), "count": 1}, "publish answer %r" % answer)
        frame = ws.recv()
        check(frame == "[%d,%s]" % (len(VALUES), live), "live frame %r" % frame)
        ws.close()

        # A refusal is a close frame with a JSON reason.
        ws = websocket.create_connection(base + "/streams/t?offset=999", timeout=10)
        code, reason = close_of(ws)
        check(code == 4416, "ahead: close code %d" % code)
        check(json.loads(reason) == {"reason": "ahead", "offset": 999, "next": len(VALUES) + 1},
              "ahead: reason %r" % reason)
        ws = websocket.create_connection(base + "/streams/nope", timeout=10)
        code, reason = close_of(ws)
        check(code == 4404 and json.loads(reason)["reason"] == "not_found",
              "unknown topic: %d %r" % (code, reason))

        # The command-line subscribers.
        url = base + "/streams/t?offset=%d" % (len(VALUES) - 2)
        tail = ["[%d,%s]" % (len(VALUES) - 2, VALUES[-2]), "[%d,%s]" % (len(VALUES) - 1,
                                                                         VALUES[-1]),
                "[%d,%s]" % (len(VALUES), live)]
        lines = run_cli(["wsdump", "-r", url], 3)
        check(len(lines) == 4 and json.loads(lines[0])["type"] == "greeting" and
              lines[1:] == tail, "wsdump printed %r" % lines)
        wscat = shutil.which("wscat")
        if wscat:
            # Debian's node-ws keeps its modules in /usr/share/nodejs, which a nodejs from
            # elsewhere (NodeSource) does not search by itself.
            env = dict(os.environ, NODE_PATH="/usr/share/nodejs")
            lines = run_cli([wscat, "-c", url], 3, env)
            check(len(lines) == 4 and json.loads(lines[0])["type"] == "greeting" and
                  lines[1:] == tail, "wscat printed %r" % lines)
        else:
            print("wscat not installed: skipped")
        # weir consume --server: the same lines as a local consume, without key and timestamp;
        # a cursor file makes the second run resume where the first stopped.
        cursor = os.path.join(data_dir, "t.cursor")
        consume = [weir, "consume", "t", "--server", base, "--cursor", cursor]
        first = subprocess.run(consume + ["--max", "30"], capture_output=True, text=True)
        check(first.returncode == 0, "consume --max 30: %r" % first.stderr)
        second = subprocess.run(consume, capture_output=True, text=True)
        check(second.returncode == 0, "consume: %r" % second.stderr)
        lines = first.stdout.splitlines() + second.stdout.splitlines()
        check(len(lines) == len(VALUES) + 1, "consume printed %d lines" % len(lines))
        for offset, (line, value) in enumerate(zip(lines, VALUES + [live])):
            check(json.loads(line) == {"partition": 0, "offset": offset,
                                       "value": json.loads(value)},
                  "consume line %d: %r" % (offset, line))
        with open(cursor) as f:
            check(json.loads(f.read()) == {"topic": "t", "partition": 0, "last": len(VALUES)},
                  "cursor file after consume")
        refused = subprocess.run([weir, "consume", "t", "--server", base, "--from", "999"],
                                 capture_output=True, text=True)
        check(refused.returncode == 2 and '"reason":"ahead"' in refused.stderr,
              "consume --from 999: %d %r" % (refused.returncode, refused.stderr))

        # $WEIR_TOKEN (consume --token) does not get in the way of a local consume.
        server.terminate()
        server.wait(timeout=10)
        server = None
        local = subprocess.run([weir, "consume", "t", "--data-dir", data_dir, "--max", "1"],
                               capture_output=True, text=True,
                               env=dict(os.environ, WEIR_TOKEN="x"))
        check(local.returncode == 0 and json.loads(local.stdout)["offset"] == 0,
              "local consume with WEIR_TOKEN set: %d %r" % (local.returncode, local.stderr))

        print("OK: python3-websocket %s, wsdump%s subscribed with no Weir code" %
              (websocket.__version__, " and wscat" if wscat else ""))
    finally:
        if server:
            server.terminate()
            try:
                server.wait(timeout=10)
            except subprocess.TimeoutExpired:
                server.kill()
        shutil.rmtree(data_dir, ignore_errors=True)


if __name__ == "__main__":
    main()
