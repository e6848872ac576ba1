"""The process function of process_crash_test.cc, on the Python worker library: deterministic, and
able to kill itself (SIGKILL) once, at an instant the test picks.

Per user: state "n" (inputs so far) and "sum" (of their "amount"); every third input emits the
running totals; timer "idle", 200 ms of event time after a user's last input, emits the user's
totals and clears them. An input with "poison" raises, so that its activation is dead-lettered.

WEIR_CRASH_WORKER=MARKER:N: the worker process handling its Nth activation, if the file MARKER
does not exist, creates it and kills itself. Weir restarts it; the new one, seeing MARKER, goes on.
"""

import os
import signal

import weir_worker

IDLE_MS = 200

_activations_in_this_life = 0


def _crash_if_asked():
    global _activations_in_this_life
    _activations_in_this_life += 1
    marker, _, n = os.environ.get("WEIR_CRASH_WORKER", "").rpartition(":")
    if marker and _activations_in_this_life == int(n) and not os.path.exists(marker):
        open(marker, "w").close()
        os.kill(os.getpid(), signal.SIGKILL)


def on_input(activation, result):
    _crash_if_asked()
    if activation.input.get("poison"):
        raise ValueError("a poisoned input")
    n = activation.state.get("n", 0) + 1
    total = activation.state.get("sum", 0) + activation.input["amount"]
    result.set("n", n)
    result.set("sum", total)
    # A late input (behind the watermark) times out from the watermark: a timer must be after it.
    result.set_timer("idle", max(activation.time, activation.watermark) + IDLE_MS)
    if n % 3 == 0:
        result.emit({"user": activation.key, "n": n, "sum": total}, activation.time)


def on_timer(activation, result):
    _crash_if_asked()
    result.emit({"user": activation.key, "idle_at": activation.time,
                 "n": activation.state.get("n", 0), "sum": activation.state.get("sum", 0)},
                activation.time)
    result.clear("n")
    result.clear("sum")


if __name__ == "__main__":
    weir_worker.run(on_input, on_timer)
