import { describe, expect, it } from 'vitest';
import { parseTimeScale } from '../support/time-scale.ts';

describe('PMSYNC_TEST_TIME_SCALE', () => {
  it('is 1 when unset or empty, else the number written', () => {
    expect(parseTimeScale(undefined)).toBe(1);
    expect(parseTimeScale(' ')).toBe(1);
    expect(parseTimeScale('3')).toBe(3);
    expect(parseTimeScale('1.5')).toBe(1.5);
  });

  it('refuses what is not a number of at least 1, saying what to write', () => {
    for (const bad of ['abc', '0', '0.5', '-2', 'Infinity']) {
      expect(() => parseTimeScale(bad)).toThrow(
        `PMSYNC_TEST_TIME_SCALE must be a number of at least 1 (3 suits a busy 2-core machine), not "${bad}"`,
      );
    }
  });
});
