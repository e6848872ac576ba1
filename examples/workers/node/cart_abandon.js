// Cart abandonment: alerts when a user adds to their cart and does not check out within ten
// minutes of event time. Keyed by user; state "cart" holds the number of items added, timer
// "abandon" fires ten minutes after the last add (declared as in ../python/cart_abandon.py).
'use strict';

const weir = require('./weir_worker');

const ABANDON_AFTER_MS = 10 * 60 * 1000;

weir.run({
  onInput(activation, result) {
    const action = activation.input.action;
    if (action === 'add_to_cart') {
      result.set('cart', (activation.state.cart ?? 0) + 1);
      result.setTimer('abandon', activation.time + ABANDON_AFTER_MS);
    } else if (action === 'checkout') {
      result.clear('cart');
      result.cancelTimer('abandon');
    }
  },
  onTimer(activation, result) {
    const items = activation.state.cart ?? 0;
    result.emit({ user: activation.key, items, abandoned_at: activation.time }, activation.time);
    result.clear('cart');
  },
});
