"""Cart abandonment: alerts when a user adds to their cart and does not check out within ten
minutes of event time.

Keyed by user. State "cart" holds the number of items added; timer "abandon" fires ten minutes
after the last add. Declared in the pipeline as:

    - process:
        id: cart_abandon
        state: [cart]
        timers: [abandon]
        worker: [python3, cart_abandon.py]

An argument names the action that ends a cart instead of "checkout" (`weir demo`'s clickstream
says "purchase"): worker: [python3, cart_abandon.py, purchase].
"""

import sys

import weir_worker

ABANDON_AFTER_MS = 10 * 60 * 1000
CHECKOUT = sys.argv[1] if len(sys.argv) > 1 and not sys.argv[1].startswith("--") else "checkout"


def on_input(activation, result):
    action = activation.input.get("action")
    if action == "add_to_cart":
        result.set("cart", activation.state.get("cart", 0) + 1)
        result.set_timer("abandon", activation.time + ABANDON_AFTER_MS)
    elif action == CHECKOUT:
        result.clear("cart")
        result.cancel_timer("abandon")


def on_timer(activation, result):
    items = activation.state.get("cart", 0)
    result.emit({"user": activation.key, "items": items, "abandoned_at": activation.time},
                activation.time)
    result.clear("cart")


if __name__ == "__main__":
    weir_worker.run(on_input, on_timer)
