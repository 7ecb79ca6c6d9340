/**
 * The order test files start in: longest first, across the three projects.
 *
 * Two files run at once on a 2-core machine, and a long file that starts last
 * runs alone at the end: by vitest's own order (a project after another,
 * larger files first where it has no durations, as in a fresh clone), the
 * scheduler's day replays started last and ran alone for their last three to
 * four minutes, 732 s for files whose durations add up to 1,187 s. Longest
 * first, the two workers end together (the longest file, about 250 s, is well
 * under half of the whole).
 *
 * Where vitest has the file's duration from an earlier run (its cache), that is
 * used; else the usual duration below; else the file's size, as vitest does
 * (files without durations, after the ones with). The usual durations are
 * rounded from a whole run (`npx vitest run --reporter=json`, 2 cores): they
 * decide an order only, so they need not be exact, and a file missing from them
 * only starts later than it could.
 */
import { stat } from 'node:fs/promises';
import { relative } from 'node:path';
import { BaseSequencer, type TestSpecification } from 'vitest/node';

/** Seconds, files of 15 s or more. */
const USUAL_SECONDS: Readonly<Record<string, number>> = {
  'test/scheduler/decide-on-change.int.test.ts': 250,
  'test/scheduler/day.int.test.ts': 125,
  'test/scheduler/held-out.int.test.ts': 110,
  'test/scheduler/held-out-days.int.test.ts': 110,
  'test/webhooks/receiver-alone.e2e.test.ts': 105,
  'test/scheduler/failing-sources.int.test.ts': 80,
  'test/fleet/replicas.e2e.test.ts': 55,
  'test/e2e/kill-resume.e2e.test.ts': 35,
  'test/webhooks/webhooks.e2e.test.ts': 20,
  'test/serve/serve.e2e.test.ts': 17,
  'test/resync/resync.e2e.test.ts': 15,
};

export default class LongestFirst extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const cache = this.ctx.cache;
    const root = this.ctx.config.root;
    const known = new Map<TestSpecification, number>();
    const sizes = new Map<TestSpecification, number>();
    await Promise.all(
      files.map(async (spec) => {
        const cached = cache.getTestSpecificationResult(spec)?.duration;
        const usual = USUAL_SECONDS[relative(root, spec.moduleId).split('\\').join('/')];
        if (cached !== undefined) known.set(spec, cached);
        else if (usual !== undefined) known.set(spec, usual * 1000);
        else
          sizes.set(
            spec,
            await stat(spec.moduleId).then(
              (s) => s.size,
              () => 0,
            ),
          );
      }),
    );
    return [...files].sort((a, b) => {
      const ka = known.get(a);
      const kb = known.get(b);
      if (ka !== undefined && kb !== undefined) return kb - ka;
      if (ka !== undefined) return -1;
      if (kb !== undefined) return 1;
      return sizes.get(b)! - sizes.get(a)!;
    });
  }
}
