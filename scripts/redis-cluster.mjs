// A throwaway local Redis Cluster for the cluster tests, the cluster benchmark and demos.
//
// startRedisCluster({ masters = 3, replicas = 0 }) → { nodes, urls, stop }
//   - starts masters × (1 + replicas) `redis-server --cluster-enabled yes` processes on free
//     loopback ports, each in its own temporary directory (no persistence);
//   - joins them with `redis-cli --cluster create … --cluster-replicas <replicas> --cluster-yes`;
//   - waits until every node reports `cluster_state:ok` and agrees on the slot map;
//   - stop() shuts every node down and removes the directories. Idempotent.
//
// Run it directly to keep a cluster up by hand (Ctrl-C stops it):
//   node scripts/redis-cluster.mjs [masters] [replicas]
import { spawn, spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { startRedisServer } from './redis-server.mjs';

function cli(port, args, timeoutMs = 10000) {
  const r = spawnSync('redis-cli', ['-h', '127.0.0.1', '-p', String(port), ...args], { encoding: 'utf8', timeout: timeoutMs });
  if (r.error) throw r.error;
  return { status: r.status, out: (r.stdout ?? '') + (r.stderr ?? '') };
}

function clusterCreate(ports, replicas) {
  return new Promise((resolve, reject) => {
    const args = ['--cluster', 'create', ...ports.map((p) => `127.0.0.1:${p}`), '--cluster-replicas', String(replicas), '--cluster-yes'];
    const child = spawn('redis-cli', args, { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    child.stdout.on('data', (b) => (out += b));
    child.stderr.on('data', (b) => (out += b));
    const timer = setTimeout(() => child.kill('SIGKILL'), 60000);
    child.on('exit', (code) => {
      clearTimeout(timer);
      if (code === 0 && /All 16384 slots covered/.test(out)) resolve(out);
      else reject(new Error(`redis-cli --cluster create failed (exit ${code}):\n${out}`));
    });
    child.on('error', reject);
  });
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/** Resolves once every node says cluster_state:ok and sees every node in CLUSTER NODES. */
async function waitClusterOk(ports, timeoutMs = 30000) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const ok = ports.every((p) => {
      const info = cli(p, ['cluster', 'info']).out;
      if (!/cluster_state:ok/.test(info)) return false;
      const known = Number(/cluster_known_nodes:(\d+)/.exec(info)?.[1] ?? 0);
      return known === ports.length;
    });
    if (ok) return;
    if (Date.now() > deadline) throw new Error(`cluster on ports ${ports.join(',')} did not reach cluster_state:ok`);
    await sleep(50);
  }
}

export async function startRedisCluster(opts = {}) {
  const masters = opts.masters ?? 3;
  const replicas = opts.replicas ?? 0;
  if (spawnSync('sh', ['-c', 'command -v redis-cli']).status !== 0) {
    throw new Error('a local Redis Cluster needs redis-cli (Debian/Ubuntu: apt-get install redis-tools)');
  }
  const servers = [];
  const stop = async () => {
    await Promise.all(servers.map((s) => s.stop()));
  };
  try {
    const count = masters * (1 + replicas);
    for (let i = 0; i < count; i++) {
      servers.push(
        await startRedisServer([
          '--cluster-enabled', 'yes',
          '--cluster-config-file', 'nodes.conf',
          '--cluster-node-timeout', String(opts.nodeTimeoutMs ?? 3000),
          '--maxmemory-policy', 'noeviction',
          ...(opts.extraArgs ?? []),
        ]),
      );
    }
    const ports = servers.map((s) => s.port);
    await clusterCreate(ports, replicas);
    await waitClusterOk(ports);
    const nodes = ports.map((port) => ({ host: '127.0.0.1', port }));
    return { nodes, ports, urls: ports.map((p) => `redis://127.0.0.1:${p}`), servers, stop };
  } catch (err) {
    await stop();
    throw err;
  }
}

// CLI: keep a cluster running until interrupted.
if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  const masters = Number(process.argv[2] ?? 3);
  const replicas = Number(process.argv[3] ?? 0);
  const c = await startRedisCluster({ masters, replicas });
  console.log(JSON.stringify({ nodes: c.nodes }));
  console.log('cluster is up; Ctrl-C stops it');
  const done = async () => {
    await c.stop();
    process.exit(0);
  };
  process.on('SIGINT', done);
  process.on('SIGTERM', done);
}
