// A Redis for development, the demo and the tests.
//
// ensureRedis() returns { url, stop }:
//   - REDIS_URL set: use it as it is; stop() does nothing.
//   - otherwise start the server binary in ECHOMQ_SERVER_BIN (a path: the Valkey run of the
//     tests sets it, see scripts/valkey-server.sh), else `redis-server` (or `valkey-server`) from
//     PATH, on a free loopback port, without persistence, in a temporary directory; stop() shuts
//     it down and removes the directory.
//   - neither installed: as root on Debian/Ubuntu, install Debian's `redis-server` with apt-get;
//     otherwise throw an error that says how to install one.
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { createServer, connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

function which(cmd) {
  const r = spawnSync('sh', ['-c', `command -v ${cmd}`], { encoding: 'utf8' });
  return r.status === 0 ? r.stdout.trim() : null;
}

export function findServerBinary() {
  const chosen = process.env.ECHOMQ_SERVER_BIN;
  if (chosen) {
    // A named binary that is missing is an error, not a silent fall back to Redis on PATH.
    if (!existsSync(chosen)) throw new Error(`ECHOMQ_SERVER_BIN=${chosen}: no such file`);
    return chosen;
  }
  return which('redis-server') ?? which('valkey-server');
}

function installWithApt() {
  const isRoot = typeof process.getuid === 'function' && process.getuid() === 0;
  if (!isRoot || !existsSync('/etc/debian_version') || !which('apt-get')) return false;
  console.error('[echomq] no redis-server on PATH: installing Debian\'s redis-server with apt-get…');
  const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' };
  const update = spawnSync('apt-get', ['update', '-qq'], { stdio: 'inherit', env });
  if (update.status !== 0) return false;
  const install = spawnSync('apt-get', ['install', '-y', '-qq', 'redis-server'], { stdio: 'inherit', env });
  return install.status === 0;
}

/** A free TCP port on 127.0.0.1, chosen by the kernel. */
export function freePort() {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.unref();
    srv.on('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address();
      srv.close(() => resolve(port));
    });
  });
}

function waitForPort(port, child, timeoutMs = 10000) {
  const deadline = Date.now() + timeoutMs;
  return new Promise((resolve, reject) => {
    const attempt = () => {
      if (child.exitCode !== null) return reject(new Error(`redis-server exited with code ${child.exitCode}`));
      const sock = connect(port, '127.0.0.1');
      sock.once('connect', () => {
        sock.write('PING\r\n');
        sock.once('data', (buf) => {
          sock.destroy();
          if (buf.toString().startsWith('+PONG')) resolve();
          else retry();
        });
      });
      sock.once('error', () => { sock.destroy(); retry(); });
    };
    const retry = () => {
      if (Date.now() > deadline) reject(new Error(`redis-server did not answer on port ${port}`));
      else setTimeout(attempt, 25);
    };
    attempt();
  });
}

/**
 * Starts a throwaway server. extraArgs are passed to redis-server (for example
 * ['--appendonly', 'yes']); opts.dir keeps the data directory (the caller removes it).
 */
export async function startRedisServer(extraArgs = [], opts = {}) {
  let bin = findServerBinary();
  if (!bin && installWithApt()) bin = findServerBinary();
  if (!bin) {
    throw new Error(
      'echomq needs a Redis server: set REDIS_URL=redis://host:port, or install one ' +
        '(Debian/Ubuntu: sudo apt-get install redis-server; macOS: brew install redis).',
    );
  }
  const port = opts.port ?? (await freePort());
  const dir = opts.dir ?? mkdtempSync(join(tmpdir(), 'echomq-redis-'));
  const args = [
    '--port', String(port), '--bind', '127.0.0.1', '--dir', dir,
    '--save', '', '--appendonly', 'no', '--daemonize', 'no', '--loglevel', 'warning',
    ...extraArgs,
  ];
  const child = spawn(bin, args, { stdio: ['ignore', 'ignore', 'inherit'] });
  await waitForPort(port, child);
  let stopped = false;
  const stop = async () => {
    if (stopped) return;
    stopped = true;
    if (child.exitCode === null) {
      const exited = new Promise((r) => child.once('exit', r));
      child.kill('SIGTERM');
      await Promise.race([exited, new Promise((r) => setTimeout(r, 3000))]);
      if (child.exitCode === null) child.kill('SIGKILL');
    }
    if (!opts.dir) rmSync(dir, { recursive: true, force: true });
  };
  return { url: `redis://127.0.0.1:${port}`, port, dir, child, stop };
}

export async function ensureRedis() {
  if (process.env.REDIS_URL) return { url: process.env.REDIS_URL, stop: async () => {} };
  return startRedisServer();
}
