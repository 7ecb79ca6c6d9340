/**
 * The layer rule of eslint.config.js, run through ESLint itself: an import of
 * a higher layer is refused from any depth, whether it names a folder or a
 * loose file, and whether it imports values or only types; an import of a
 * lower layer passes. The configuration sits below the streams it is checked
 * against.
 */
import { fileURLToPath } from 'node:url';
import { ESLint } from 'eslint';
import { describe, expect, it } from 'vitest';

const cwd = fileURLToPath(new URL('../..', import.meta.url));
const eslint = new ESLint({ cwd });

/** The layer rule's messages for `code` as if it were the file at `filePath`. */
async function layerErrors(filePath: string, code: string): Promise<string[]> {
  const [result] = await eslint.lintText(code, { filePath });
  return result!.messages.filter((m) => m.ruleId === '@typescript-eslint/no-restricted-imports').map((m) => m.message);
}

describe('layers', () => {
  it('refuses an import of a higher layer', async () => {
    const errors = await layerErrors(
      'src/state/example.ts',
      "import { syncSource } from '../sync/driver.ts';\nexport const run = syncSource;\n",
    );
    expect(errors).toEqual([expect.stringContaining('src/state must not import src/sync: it sits in a higher layer')]);
  });

  it('refuses it from a nested folder and for a loose file, and from a loose file', async () => {
    expect(await layerErrors('src/sync/readers/example.ts', "export { planStreams } from '../../scheduler/plan.ts';\n")).toHaveLength(1);
    expect(
      await layerErrors(
        'src/sync/streams/core/example.ts',
        "import { openApp } from '../../../../app.ts';\nexport const open = openApp;\n",
      ),
    ).toHaveLength(1);
    expect(await layerErrors('src/log.ts', "import { openApp } from './app.ts';\nexport const open = openApp;\n")).toHaveLength(1);
    expect(
      await layerErrors('src/cli/main.ts', "import { startServe } from '../serve/serve.ts';\nexport const start = startServe;\n"),
    ).toEqual([]);
    expect(await layerErrors('src/serve/example.ts', "import { main } from '../cli/main.ts';\nexport const run = main;\n")).toHaveLength(1);
  });

  it('lets a lower layer and its own unit through, types included', async () => {
    const code = [
      "import { loadCheckpoint } from '../state/checkpoints.ts';",
      "import { DriftObserver } from './drift.ts';",
      "import type { TableDef } from '../db/table.ts';",
      'export const used: [unknown, unknown, TableDef | undefined] = [loadCheckpoint, DriftObserver, undefined];',
      '',
    ].join('\n');
    expect(await layerErrors('src/sync/example.ts', code)).toEqual([]);
  });

  it('refuses a type-only import of a higher layer too', async () => {
    const refused = expect.stringContaining('src/sync must not import src/scheduler: it sits in a higher layer');
    expect(
      await layerErrors(
        'src/sync/example.ts',
        "import type { ScheduledStream } from '../scheduler/plan.ts';\nexport const none: ScheduledStream | undefined = undefined;\n",
      ),
    ).toEqual([refused]);
    expect(
      await layerErrors(
        'src/sync/readers/example.ts',
        "import { type ScheduledStream } from '../../scheduler/plan.ts';\nexport const none: ScheduledStream | undefined = undefined;\n",
      ),
    ).toEqual([refused]);
    expect(await layerErrors('src/sync/example.ts', "export type { ScheduledStream } from '../scheduler/plan.ts';\n")).toEqual([refused]);
    expect(
      await layerErrors('src/db/example.ts', "import type { StreamBase } from '../sync/types.ts';\nexport type Stream = StreamBase;\n"),
    ).toEqual([expect.stringContaining('src/db must not import src/sync: it sits in a higher layer')]);
  });

  it('keeps the configuration below the code it configures', async () => {
    expect(
      await layerErrors(
        'src/config/example.ts',
        "import { resourceNames } from '../sync/streams/index.ts';\nexport const names = resourceNames;\n",
      ),
    ).toEqual([expect.stringContaining('src/config must not import src/sync: it sits in a higher layer')]);
    expect(
      await layerErrors(
        'src/api/example.ts',
        "import { DEFAULT_RETRY } from '../config/schema.ts';\nexport const retry = DEFAULT_RETRY;\n",
      ),
    ).toEqual([]);
  });
});
