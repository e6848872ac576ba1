"""A worker that misbehaves on request, written against the raw protocol (no library), for
worker_test.cc.

Each input's "do" says what to do with the call that holds it:
  "echo" (or absent)  output the input at its time
  "crash"             exit with code 3 mid-call
  "hang"              never answer
  "garbage"           answer with a line that is not JSON
  "oversize"          answer with a line of 2 MiB
  "wrong-call"        answer as if the call were another
  "raise"             answer {"type":"error"}
  "print"             print to stdout and stderr, then echo
  "unknown-id"        echo under an activation id the call does not hold
  "duplicate-id"      echo twice
  "missing-result"    give no result for it
  "unknown-field"     echo with a field the protocol does not have ("extra")
  "undeclared-state"  echo and set state "undeclared", which no step declares
Arguments: --start-delay SECONDS (before ready), --listen unix:PATH (serve there instead of fd 3),
--protocol N (claimed in ready).
"""

import json
import os
import socket
import sys
import time


def option(name, default):
    args = sys.argv[1:]
    return args[args.index(name) + 1] if name in args else default


def send(sock, message):
    sock.sendall((json.dumps(message, separators=(",", ":")) + "\n").encode())


def serve(sock):
    reader = sock.makefile("rb")
    if not reader.readline():
        return
    time.sleep(float(option("--start-delay", "0")))
    send(sock, {"type": "ready", "protocol": int(option("--protocol", "1"))})
    for line in reader:
        invoke = json.loads(line)
        call = invoke["call"]
        results = []
        for activation in invoke["activations"]:
            do = (activation.get("input") or {}).get("do", "echo")
            if do == "crash":
                os._exit(3)
            if do == "hang":
                time.sleep(3600)
            if do == "garbage":
                sock.sendall(b"this is not json\n")
                break
            if do == "oversize":
                sock.sendall(b'"' + b"x" * (2 << 20) + b'"\n')
                break
            if do == "wrong-call":
                call += 1
            if do == "raise":
                send(sock, {"type": "error", "call": call, "message": "ValueError: asked to"})
                break
            if do == "print":
                print("a stray print on stdout", flush=True)
                print("and one on stderr", file=sys.stderr, flush=True)
            result = {"id": activation["id"],
                      "outputs": [{"value": activation.get("input"), "time": activation["time"]}]}
            if do == "unknown-id":
                result["id"] += 1000000
            if do == "unknown-field":
                result["extra"] = 1
            if do == "undeclared-state":
                result["state"] = {"undeclared": {"set": 1}}
            if do != "missing-result":
                results.append(result)
            if do == "duplicate-id":
                results.append(result)
        else:
            send(sock, {"type": "result", "call": call, "results": results})


listen = option("--listen", None)
if listen is None:
    serve(socket.socket(fileno=int(os.environ["WEIR_WORKER_FD"])))
else:
    path = listen[len("unix:"):]
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(path)
    server.listen(1)
    while True:
        connection, _ = server.accept()
        with connection:
            serve(connection)
