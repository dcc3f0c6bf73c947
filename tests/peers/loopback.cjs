// Preload for Node MCP peers that have no host option (server-everything does
// `app.listen(PORT)`, which binds every interface). Load it with
//
//   PORT=0 node --require <repo>/tests/peers/loopback.cjs \
//     <repo>/tests/peers/node_modules/@modelcontextprotocol/server-everything/dist/index.js streamableHttp
//
// It does two things, and nothing else:
//   1. every TCP `listen` in the process is bound to 127.0.0.1 (or $LIFELINE_LOOPBACK_HOST),
//      whatever host the program asked for; Unix-socket and handle listens are left alone;
//   2. once the first TCP server accepts connections, it writes exactly one line to stdout:
//        LISTENING http://127.0.0.1:<port><path>
//      where <port> is the port really bound (so PORT=0 gives a free port with no race) and
//      <path> is $LIFELINE_LOOPBACK_PATH, else "/sse" when the program's first argument is
//      "sse", else "/mcp".
// In stdio mode nothing listens, so nothing is printed and stdout stays pure JSON-RPC.
'use strict';

const net = require('node:net');

const HOST = process.env.LIFELINE_LOOPBACK_HOST || '127.0.0.1';
const PATH =
  process.env.LIFELINE_LOOPBACK_PATH ?? (process.argv[2] === 'sse' ? '/sse' : '/mcp');

const originalListen = net.Server.prototype.listen;
let announced = false;

function isPortLike(v) {
  return typeof v === 'number' || (typeof v === 'string' && /^\d+$/.test(v));
}

function announce(server) {
  if (announced) return;
  const addr = server.address();
  if (!addr || typeof addr !== 'object') return;
  announced = true;
  const host = addr.family === 'IPv6' ? `[${addr.address}]` : addr.address;
  process.stdout.write(`LISTENING http://${host}:${addr.port}${PATH}\n`);
}

net.Server.prototype.listen = function loopbackListen(...args) {
  const first = args[0];
  const cb = typeof args[args.length - 1] === 'function' ? args[args.length - 1] : undefined;
  let rewritten = null;

  if (first === undefined || typeof first === 'function') {
    // listen() / listen(cb): an ephemeral port.
    rewritten = { port: 0, host: HOST };
  } else if (isPortLike(first)) {
    // listen(port[, host][, backlog][, cb])
    const rest = args.slice(1).filter((a) => typeof a !== 'function');
    const backlog = rest.find((a) => typeof a === 'number');
    rewritten = { port: Number(first), host: HOST };
    if (backlog !== undefined) rewritten.backlog = backlog;
  } else if (
    first !== null &&
    typeof first === 'object' &&
    first.path === undefined &&
    first.fd === undefined &&
    first._handle === undefined &&
    first.handle === undefined
  ) {
    // listen(options[, cb]) with a TCP port.
    rewritten = { ...first, host: HOST };
    delete rewritten.ipv6Only;
  }

  if (rewritten === null) {
    // A pipe path or a handle: not ours to touch.
    return originalListen.apply(this, args);
  }
  this.once('listening', () => announce(this));
  return cb ? originalListen.call(this, rewritten, cb) : originalListen.call(this, rewritten);
};
