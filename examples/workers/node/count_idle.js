// Count + idle timer per key: the function of `weir bench process --handler node`, the same as
// `weir-cpp-worker count-idle` and the benchmark's native one (src/process/count_idle.h).
// Per input: state "count" + 1, timer "idle" at the input's time + IDLE_MS (replacing the key's
// previous one). When "idle" fires: emits {key, count} and clears "count".
//
// Usage: node count_idle.js [IDLE_MS]   (default 60000)
'use strict';

const weir = require('./weir_worker');

const arg = process.argv[2];
const IDLE_MS = arg !== undefined && arg !== '--listen' ? Number(arg) : 60000;

weir.run({
  onInput(activation, result) {
    result.set('count', (activation.state.count ?? 0) + 1);
    result.setTimer('idle', activation.time + IDLE_MS);
  },
  onTimer(activation, result) {
    result.emit({ key: activation.key, count: activation.state.count ?? 0 }, activation.time);
    result.clear('count');
  },
});
