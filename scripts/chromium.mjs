// Debian's Chromium for the browser tests (dashboard, bull-board), the way redis-server.mjs
// provides redis-server: ensureChromium() returns the path of the browser, installing the
// `chromium` package with apt-get when it is missing and we run as root on Debian/Ubuntu.
// Otherwise it returns null with a one-line reason, which the browser tests print when they skip.
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';

export const CHROMIUM = '/usr/bin/chromium';

/** { path } when Chromium is there (or was just installed), else { path: null, reason }. */
export function ensureChromium() {
  if (existsSync(CHROMIUM)) return { path: CHROMIUM, reason: '' };
  const isRoot = typeof process.getuid === 'function' && process.getuid() === 0;
  const apt = spawnSync('sh', ['-c', 'command -v apt-get'], { encoding: 'utf8' }).status === 0;
  if (!isRoot || !existsSync('/etc/debian_version') || !apt) {
    return { path: null, reason: `${CHROMIUM} is missing; install it with: sudo apt-get install -y chromium` };
  }
  console.error("[echomq] no Chromium at /usr/bin/chromium: installing Debian's chromium with apt-get…");
  const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' };
  const update = spawnSync('apt-get', ['update', '-qq'], { stdio: 'inherit', env });
  const install = update.status === 0 && spawnSync('apt-get', ['install', '-y', '-qq', 'chromium'], { stdio: 'inherit', env });
  if (install && install.status === 0 && existsSync(CHROMIUM)) return { path: CHROMIUM, reason: '' };
  return { path: null, reason: `apt-get could not install chromium; install it with: apt-get install -y chromium` };
}
