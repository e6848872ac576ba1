// A broadcast server written the way the ws README's "Server broadcast" example writes one
// (ws 8, "A client WebSocket broadcasting to every other connected WebSocket clients, excluding
// itself"): every message received is sent with client.send(data, { binary: isBinary }) to
// every other client whose readyState is OPEN. Subscribers connect to /sub and only listen; the
// publisher connects to /pub. perMessageDeflate stays off (the ws server's default since 8.0).
//
//   node ws_broadcast.js PORT    (listens on 127.0.0.1; run.sh sets NODE_PATH to npm's ws, with
//                                 bufferutil, in build-peers/npm/node_modules)
'use strict';

const WebSocket = require('ws');

const port = Number(process.argv[2]);
if (!Number.isInteger(port) || port <= 0) {
  console.error('usage: node ws_broadcast.js PORT');
  process.exit(2);
}

const wss = new WebSocket.WebSocketServer({ host: '127.0.0.1', port });

wss.on('connection', function connection(ws, req) {
  if (req.url !== '/pub' && req.url !== '/sub') {
    ws.close(4404, 'use /pub or /sub');
    return;
  }
  ws.on('error', (err) => console.error('ws_broadcast: client error:', err.message));
  ws.on('message', function message(data, isBinary) {
    wss.clients.forEach(function each(client) {
      if (client !== ws && client.readyState === WebSocket.OPEN) {
        client.send(data, { binary: isBinary });
      }
    });
  });
});

wss.on('listening', () => console.log(`ws_broadcast: listening on 127.0.0.1:${port}`));
process.on('SIGTERM', () => process.exit(0));
