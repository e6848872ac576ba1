// weir_worker: write a Weir process step's handler in Node.js (standard library only).
//
// Weir runs the worker as a child with its protocol socket as fd 3 (WEIR_WORKER_FD), or connects
// to a worker that listens (`connect:` in the pipeline; start it with `--listen ADDRESS` or
// WEIR_WORKER_LISTEN=ADDRESS, where ADDRESS is unix:PATH or 127.0.0.1:PORT). The wire protocol is
// described in src/process/README.md; this module hides it:
//
//   const weir = require('./weir_worker');
//   weir.run({
//     onInput(activation, result) {
//       result.set('count', (activation.state.count ?? 0) + 1);
//       result.setTimer('idle', activation.time + 60000);
//     },
//     onTimer(activation, result) {
//       result.emit({ key: activation.key, count: activation.state.count ?? 0 }, activation.time);
//       result.clear('count');
//     },
//   });
//
// Weir validates every proposed change before applying any. A handler that throws refuses its
// whole call (Weir retries, then isolates the activation and dead-letters it); the stack goes to
// stderr, which Weir shows as `weir: [process STEP] ...` lines, as it does stdout.
//
// Numbers: JSON.parse reads numbers as doubles, so integers beyond 2^53 lose precision. Event
// times in milliseconds are far below that; the watermark at the end of a bounded input is
// int64's maximum (9223372036854775807) and reads as 9223372036854775808: compare it, do not
// compute timers from it.
'use strict';

const net = require('net');
const fs = require('fs');

const PROTOCOL = 1;

class Result {
  constructor(id) {
    this.id = id;
    this.outputs = [];
    this.state = {};
    this.timers = [];
  }
  // Outputs `value` at event time `time`, keyed by `key` (omitted: the activation's key).
  emit(value, time, ...key) {
    const output = { value, time };
    if (key.length > 0) output.key = key[0];
    this.outputs.push(output);
  }
  set(name, value) { this.state[name] = { set: value }; }
  clear(name) { this.state[name] = 'clear'; }
  // Fires timer `name` once the watermark reaches `at`; replaces a pending one.
  setTimer(name, at) { this.timers.push({ set: name, at }); }
  cancelTimer(name) { this.timers.push({ cancel: name }); }
}

function answer(invoke, handlers) {
  const results = [];
  for (const item of invoke.activations) {
    // id, key, time, state, and input (an input) or timer (a timer's name).
    const activation = { ...item, watermark: item.watermark ?? invoke.watermark, isTimer: 'timer' in item };
    const result = new Result(item.id);
    const handler = activation.isTimer ? handlers.onTimer : handlers.onInput;
    try {
      if (handler) handler(activation, result);
    } catch (error) {
      console.error(error);
      const message = `activation ${item.id}: ${error && error.name}: ${error && error.message}`;
      return { type: 'error', call: invoke.call, message };
    }
    results.push(result);
  }
  return { type: 'result', call: invoke.call, results };
}

// Speaks the protocol on a connected stream until Weir closes it.
function serve(stream, handlers) {
  let buffer = '';
  let started = false;
  stream.setEncoding('utf8');
  stream.on('data', (chunk) => {
    buffer += chunk;
    let end;
    while ((end = buffer.indexOf('\n')) >= 0) {
      const message = JSON.parse(buffer.slice(0, end));
      buffer = buffer.slice(end + 1);
      if (!started) {
        if (message.type !== 'hello' || message.protocol !== PROTOCOL) {
          throw new Error(`expected hello of protocol ${PROTOCOL}, got ${JSON.stringify(message)}`);
        }
        if (handlers.onHello) handlers.onHello(message);
        started = true;
        stream.write(JSON.stringify({ type: 'ready', protocol: PROTOCOL }) + '\n');
        continue;
      }
      stream.write(JSON.stringify(answer(message, handlers)) + '\n');
    }
  });
  stream.on('error', (error) => console.error(error));
}

function listenAddress() {
  const at = process.argv.indexOf('--listen');
  if (at >= 0 && at + 1 < process.argv.length) return process.argv[at + 1];
  return process.env.WEIR_WORKER_LISTEN;
}

// Runs the worker: on fd WEIR_WORKER_FD, or listening (--listen / WEIR_WORKER_LISTEN) for Weir's
// connections. handlers: { onInput, onTimer, onHello }.
function run(handlers) {
  const address = listenAddress();
  if (!address) {
    const stream = new net.Socket({ fd: Number(process.env.WEIR_WORKER_FD), readable: true,
                                    writable: true });
    serve(stream, handlers);
    return;
  }
  const server = net.createServer((stream) => serve(stream, handlers));
  if (address.startsWith('unix:')) {
    const path = address.slice('unix:'.length);
    if (fs.existsSync(path)) fs.unlinkSync(path);
    server.listen(path);
  } else {
    const colon = address.lastIndexOf(':');
    server.listen(Number(address.slice(colon + 1)), address.slice(0, colon));
  }
}

module.exports = { run, serve, Result, PROTOCOL };
