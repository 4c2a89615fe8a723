// A real Redis server for the single-use tests: Debian's, unpacked by
// scripts/redis-env.sh (STATESEAL_REDIS_SERVER, as scripts/node-package.sh
// exports it), one per test on a free loopback port, stopped by its PID.
import { spawn } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { connect, createServer } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';

import { ROOT } from './harness.mjs';

const SERVER = process.env.STATESEAL_REDIS_SERVER ?? path.join(ROOT, 'target/redis-env/redis-server');

async function freePort() {
  const probe = createServer();
  await new Promise((resolve) => probe.listen(0, '127.0.0.1', resolve));
  const { port } = probe.address();
  await new Promise((resolve) => probe.close(resolve));
  return port;
}

/** Whether something answers PING on `port`. */
function answers(port) {
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1');
    socket.setTimeout(500);
    socket.on('connect', () => socket.write('PING\r\n'));
    socket.on('data', (d) => {
      socket.destroy();
      resolve(d.toString().startsWith('+PONG'));
    });
    socket.on('error', () => resolve(false));
    socket.on('timeout', () => {
      socket.destroy();
      resolve(false);
    });
  });
}

/** A started `redis-server`: `uri`, `stop()` (kills it by PID), `start()` again on the same port. */
export async function redis() {
  const port = await freePort();
  const dir = mkdtempSync(path.join(tmpdir(), 'stateseal-node-redis-'));
  let child;
  const server = {
    uri: `redis://127.0.0.1:${port}/0`,
    async start() {
      const args = ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--dir', dir];
      child = spawn(SERVER, args, { stdio: 'ignore' });
      const deadline = Date.now() + 10_000;
      while (!(await answers(port))) {
        if (child.exitCode !== null || Date.now() > deadline) throw new Error(`redis-server did not start (${SERVER})`);
        await new Promise((r) => setTimeout(r, 50));
      }
    },
    async stop() {
      if (!child || child.exitCode !== null) return;
      const exited = new Promise((resolve) => child.once('exit', resolve));
      process.kill(child.pid, 'SIGKILL');
      await exited;
    },
  };
  await server.start();
  return server;
}
