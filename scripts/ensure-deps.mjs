// Installs the locked dependencies on first use, so a fresh clone needs only
// `npm run demo` or `npm test`. Plain JavaScript: it runs on whatever Node the
// machine has, before the project's pinned Node 24 (a devDependency) exists.
import { existsSync } from 'node:fs';
import { spawnSync } from 'node:child_process';

const ready = ['node_modules/.bin/node', 'node_modules/.bin/vitest', 'node_modules/.package-lock.json'].every((p) => existsSync(p));
if (!ready) {
  process.stderr.write('pmsync: installing dependencies (npm ci), once...\n');
  const res = spawnSync('npm', ['ci', '--no-audit', '--no-fund'], { stdio: 'inherit', shell: process.platform === 'win32' });
  process.exit(res.status ?? 1);
}
