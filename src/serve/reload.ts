/**
 * Reloading the config file of a running `serve`, so practices are added,
 * changed or removed without a restart.
 *
 * - When: every serve.reloadSeconds the config file and the secret files it
 *   names (`{ "file": ... }`) are hashed, and read only when the hash
 *   changed; SIGHUP reads them at once whatever the hash; a run for a source
 *   this replica does not know asks for a look too (another replica may have
 *   seen the new file first).
 * - A file with problems is refused whole: every problem is logged in one
 *   error line and the replica goes on with the configuration it has.
 * - A valid one is applied (src/config/diff.ts says what can change live):
 *   one info line names the sources added, removed and changed, and one
 *   warning the settings that keep their old value until a restart.
 */
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { secretFiles } from '../config/secrets.ts';
import type { Config } from '../config/schema.ts';
import { describeChanges, diffConfig, hasChanges, keepRestartSettings } from '../config/diff.ts';
import { ConfigError } from '../errors.ts';
import type { Logger } from '../log.ts';

export interface ReloaderDeps {
  /** The config file, as given to `serve`. */
  file: string;
  /** Loads and validates the whole configuration as `serve` did at start; throws a ConfigError. */
  load: () => Config;
  current: () => Config;
  /** Puts a configuration in force; a ConfigError refuses it, with nothing changed. */
  apply: (next: Config) => Promise<void>;
  /** Further settings of `next` that need a restart here (e.g. webhooks when none were started). */
  restartNotes?: (next: Config) => string[];
  logger: Logger;
}

export type ReloadOutcome = 'unchanged' | 'applied' | 'refused';

export interface CheckOptions {
  /** Read the file even if its hash did not change (SIGHUP). */
  force?: boolean;
}

/**
 * A hash of what a load reads from disk: the config file and each secret file
 * it names. A file that cannot be read hashes as such, so its return is seen.
 */
export function configInputHash(file: string): string {
  const hash = createHash('sha256');
  const text = readOrMissing(file);
  hash.update(`${file}\0${text ?? '\0missing'}\0`);
  let input: unknown = null;
  try {
    input = text === undefined ? null : JSON.parse(text);
  } catch {
    // The load reports it.
  }
  for (const path of secretFiles(input, file)) hash.update(`${path}\0${readOrMissing(path) ?? '\0missing'}\0`);
  return hash.digest('hex');
}

function readOrMissing(path: string): string | undefined {
  try {
    return readFileSync(path, 'utf8');
  } catch {
    return undefined;
  }
}

export class ConfigReloader {
  private readonly deps: ReloaderDeps;
  private readonly log: Logger;
  /** Hash of what the last look read; null until the first look after start. */
  private lastHash: string | null = null;
  private running: Promise<ReloadOutcome> | null = null;
  private queued: { promise: Promise<ReloadOutcome>; force: boolean } | null = null;
  private timer: NodeJS.Timeout | undefined;

  constructor(deps: ReloaderDeps) {
    this.deps = deps;
    this.log = deps.logger.child({ component: 'config' });
  }

  /** Looks every `seconds` (0: never; SIGHUP only). */
  every(seconds: number): void {
    clearInterval(this.timer);
    this.timer = undefined;
    if (seconds <= 0) return;
    this.timer = setInterval(() => void this.check(), seconds * 1000);
    this.timer.unref();
  }

  stop(): void {
    clearInterval(this.timer);
    this.timer = undefined;
  }

  /**
   * Reads the configuration if it changed (or at once, with force) and
   * applies it. Looks never overlap: one asked for while another runs waits
   * for it, and all such requests share the one look that follows.
   */
  check(options: CheckOptions = {}): Promise<ReloadOutcome> {
    const force = options.force === true;
    if (!this.running) return this.begin(force);
    if (this.queued) {
      this.queued.force ||= force;
      return this.queued.promise;
    }
    const queued: { promise: Promise<ReloadOutcome>; force: boolean } = { force, promise: Promise.resolve('unchanged') };
    queued.promise = this.running.then(
      () => this.begin(queued.force, true),
      () => this.begin(queued.force, true),
    );
    this.queued = queued;
    return queued.promise;
  }

  private begin(force: boolean, fromQueue = false): Promise<ReloadOutcome> {
    if (fromQueue) this.queued = null;
    const look = this.look(force).catch((err: unknown) => {
      this.log.error({ err, file: this.deps.file }, 'config file could not be reloaded; the replica keeps its configuration');
      return 'refused' as const;
    });
    this.running = look.finally(() => (this.running = null));
    return this.running;
  }

  private async look(force: boolean): Promise<ReloadOutcome> {
    const hash = configInputHash(this.deps.file);
    if (!force && hash === this.lastHash) return 'unchanged';
    this.lastHash = hash;
    let next: Config;
    try {
      next = this.deps.load();
    } catch (err) {
      if (!(err instanceof ConfigError)) throw err;
      return this.refuse(err.problems);
    }
    const current = this.deps.current();
    const changes = diffConfig(current, next);
    const live = keepRestartSettings(current, next);
    const restart = [...changes.needsRestart, ...(this.deps.restartNotes?.(live) ?? [])];
    if (hasChanges(changes)) {
      try {
        await this.deps.apply(live);
      } catch (err) {
        if (!(err instanceof ConfigError)) throw err;
        return this.refuse(err.problems);
      }
      this.log.info(
        { file: this.deps.file, added: changes.added, removed: changes.removed, changed: changes.changed, settings: changes.settings },
        `config reloaded: ${describeChanges(changes)}`,
      );
    } else if (force) {
      this.log.info({ file: this.deps.file }, 'config file read: no change to apply');
    }
    if (restart.length > 0) {
      this.log.warn(
        { file: this.deps.file, settings: restart },
        `config file: changes that need a restart to take effect (the running values are kept until then): ${restart.join('; ')}`,
      );
    }
    return hasChanges(changes) ? 'applied' : 'unchanged';
  }

  private refuse(problems: string[]): ReloadOutcome {
    this.log.error(
      { file: this.deps.file, problems },
      `config file refused (${problems.length} problem${problems.length === 1 ? '' : 's'}): the replica keeps running on its last good configuration`,
    );
    return 'refused';
  }
}
