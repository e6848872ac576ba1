"""weir_worker: write a Weir process step's handler in Python (standard library only).

Weir runs the worker as a child with its protocol socket as fd 3 (WEIR_WORKER_FD), or connects
to a worker that listens (`connect:` in the pipeline; start it with `--listen ADDRESS` or
WEIR_WORKER_LISTEN=ADDRESS, where ADDRESS is unix:PATH or 127.0.0.1:PORT). The wire protocol is
described in src/process/README.md; this module hides it:

    import weir_worker

    def on_input(activation, result):
        count = activation.state.get("count", 0) + 1
        result.set("count", count)
        result.set_timer("idle", activation.time + 60_000)

    def on_timer(activation, result):
        result.emit({"key": activation.key, "count": activation.state.get("count", 0)},
                    activation.time)
        result.clear("count")

    weir_worker.run(on_input, on_timer)

A handler proposes changes through `result`; Weir validates them all before applying any (state
and timer names must be declared, a timer must be after the watermark, an output not before its
activation's time). A handler that raises refuses its whole call: Weir retries it, then isolates
the activation that fails and sends it to the dead-letter topic. The traceback goes to stderr,
which Weir shows as `weir: [process STEP] ...` lines; so does anything printed to stdout.
Handlers must not keep state of their own between calls: Weir owns the state, and a worker can be
restarted at any time.
"""

import json
import os
import socket
import sys
import threading
import traceback

PROTOCOL = 1
_NO_KEY = object()


class Activation:
    """What a handler sees: an input record, or a timer that fired, with the key's state."""

    __slots__ = ("id", "key", "time", "watermark", "input", "timer", "state")

    def __init__(self, item, watermark):
        self.id = item["id"]
        self.key = item["key"]  # a str, an int, None, or other JSON for JSON keys
        self.time = item["time"]  # event time in ms: the input's, or the timer's
        # The task's watermark when the activation was made (a timer must be set after it); the
        # call's, the lowest of its activations', for an engine that does not send it.
        self.watermark = item.get("watermark", watermark)
        self.input = item.get("input")  # the input's value; None for a timer
        self.timer = item.get("timer")  # the timer's name; None for an input
        self.state = item["state"]  # dict: the key's declared state values that are present

    @property
    def is_timer(self):
        return self.timer is not None


class Result:
    """The changes a handler proposes for one activation."""

    def __init__(self, activation_id):
        self._id = activation_id
        self._outputs = []
        self._state = {}
        self._timers = []

    def emit(self, value, time, key=_NO_KEY):
        """Outputs `value` at event time `time`, keyed by `key` (default: the activation's)."""
        output = {"value": value, "time": time}
        if key is not _NO_KEY:
            output["key"] = key
        self._outputs.append(output)

    def set(self, name, value):
        self._state[name] = {"set": value}

    def clear(self, name):
        self._state[name] = "clear"

    def set_timer(self, name, at):
        """Fires timer `name` once the watermark reaches `at`; replaces a pending one."""
        self._timers.append({"set": name, "at": at})

    def cancel_timer(self, name):
        self._timers.append({"cancel": name})

    def to_json(self):
        return {"id": self._id, "outputs": self._outputs, "state": self._state,
                "timers": self._timers}


def _dumps(message):
    # allow_nan=False: JSON has no NaN; a handler emitting one gets an error, not bad JSON.
    return (json.dumps(message, separators=(",", ":"), allow_nan=False) + "\n").encode()


def _answer(invoke, on_input, on_timer):
    watermark = invoke["watermark"]
    results = []
    for item in invoke["activations"]:
        activation = Activation(item, watermark)
        result = Result(activation.id)
        handler = on_timer if activation.is_timer else on_input
        try:
            if handler is not None:
                handler(activation, result)
        except Exception as error:  # the handler's failure refuses the call, named
            traceback.print_exc()
            message = f"activation {activation.id}: {type(error).__name__}: {error}"
            return {"type": "error", "call": invoke["call"], "message": message}
        results.append(result.to_json())
    return {"type": "result", "call": invoke["call"], "results": results}


def serve(sock, on_input, on_timer=None, on_hello=None):
    """Speaks the protocol on a connected socket until Weir closes it."""
    reader = sock.makefile("rb")
    hello = json.loads(reader.readline() or "null")
    if not isinstance(hello, dict) or hello.get("type") != "hello":
        raise RuntimeError(f"expected hello from Weir, got {hello!r}")
    if hello.get("protocol") != PROTOCOL:
        raise RuntimeError(f"Weir speaks protocol {hello.get('protocol')}, this library {PROTOCOL}")
    if on_hello is not None:
        on_hello(hello)
    sock.sendall(_dumps({"type": "ready", "protocol": PROTOCOL}))
    for line in reader:
        invoke = json.loads(line)
        try:
            reply = _answer(invoke, on_input, on_timer)
            data = _dumps(reply)
        except ValueError as error:  # an output that is not JSON (NaN, a set, ...)
            traceback.print_exc()
            data = _dumps({"type": "error", "call": invoke["call"],
                           "message": f"the result is not JSON: {error}"})
        sock.sendall(data)


def _listen(address):
    if address.startswith("unix:"):
        path = address[len("unix:"):]
        if os.path.exists(path):
            os.unlink(path)
        server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        server.bind(path)
    else:
        host, _, port = address.rpartition(":")
        server = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        server.bind((host, int(port)))
    server.listen(16)
    return server


def run(on_input, on_timer=None, on_hello=None, listen=None):
    """Runs the worker: on fd WEIR_WORKER_FD, or listening at `listen` (default: --listen
    ADDRESS on the command line, or WEIR_WORKER_LISTEN), serving each connection (one per task
    of the step) on a thread of its own.
    `on_hello(hello)` gets the step's descriptor (function, version, state, timers, limits)."""
    if listen is None and "--listen" in sys.argv[1:-1]:
        listen = sys.argv[sys.argv.index("--listen") + 1]
    listen = listen or os.environ.get("WEIR_WORKER_LISTEN")
    if listen is None:
        fd = int(os.environ["WEIR_WORKER_FD"])
        serve(socket.socket(fileno=fd), on_input, on_timer, on_hello)
        return
    server = _listen(listen)

    def serve_connection(connection):
        with connection:
            try:
                serve(connection, on_input, on_timer, on_hello)
            except (OSError, ValueError, RuntimeError):
                traceback.print_exc()  # this connection is lost; Weir reconnects

    # Each task of a step opens its own connection: serve them at the same time.
    while True:
        connection, _ = server.accept()
        threading.Thread(target=serve_connection, args=(connection,), daemon=True).start()
