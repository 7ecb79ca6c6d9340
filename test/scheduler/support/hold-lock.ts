/**
 * A separate process that takes one stream lock: prints "locked" (then holds it
 * until its stdin closes) or "busy" (and exits 3). Usage:
 *   node hold-lock.ts DATABASE_URL SOURCE RESOURCE [WAIT_MS]
 */
import { createPool } from '../../../src/db/pool.ts';
import { acquireStreamLock } from '../../../src/state/locks.ts';

const [url, source, resource, wait] = process.argv.slice(2);
const pool = createPool(url!, 1);
const lock = await acquireStreamLock(pool, source!, resource!, { waitMs: Number(wait ?? 0) });
if (!lock) {
  process.stdout.write('busy\n');
  await pool.end();
  process.exit(3);
}
process.stdout.write('locked\n');
process.stdin.resume();
process.stdin.on('end', async () => {
  await lock.release();
  await pool.end();
  process.stdout.write('released\n');
});
