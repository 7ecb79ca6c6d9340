/** The problems of the configuration a call refuses (a ConfigError), for tests of what loadConfig says. */
import { ConfigError } from '../../src/errors.ts';

/** The problems `fn` refuses its configuration with; fails when it throws anything else, or nothing. */
export function configProblems(fn: () => unknown): string[] {
  try {
    fn();
  } catch (err) {
    if (err instanceof ConfigError) return err.problems;
    throw err;
  }
  throw new Error('expected a ConfigError');
}
