// Loopback ports for the processes a drill starts.
'use strict';

const net = require('node:net');

/** A free loopback port (a server's public URL must be known before it listens). */
function freePort() {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address();
      srv.close(() => resolve(port));
    });
  });
}

module.exports = { freePort };
