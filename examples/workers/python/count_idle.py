"""Count + idle timer per key: the function of `weir bench process --handler python`, the same
as `weir-cpp-worker count-idle` and the benchmark's native one (src/process/count_idle.h).

Per input: state "count" + 1, timer "idle" at the input's time + IDLE_MS (replacing the key's
previous one). When "idle" fires: emits {"key": K, "count": N} and clears "count". Declared as:

    - process:
        id: count_idle
        state: [count]
        timers: [idle]
        worker: [python3, count_idle.py, "60000"]

Usage: python3 count_idle.py [IDLE_MS]   (default 60000)
"""

import sys

import weir_worker

IDLE_MS = int(sys.argv[1]) if len(sys.argv) > 1 and sys.argv[1] != "--listen" else 60_000


def on_input(activation, result):
    result.set("count", activation.state.get("count", 0) + 1)
    result.set_timer("idle", activation.time + IDLE_MS)


def on_timer(activation, result):
    result.emit({"key": activation.key, "count": activation.state.get("count", 0)},
                activation.time)
    result.clear("count")


if __name__ == "__main__":
    weir_worker.run(on_input, on_timer)
