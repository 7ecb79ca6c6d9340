import { describe, expect, it } from 'vitest';
import type { FetchedPage } from '../../src/api/pager.ts';
import { PmsyncError } from '../../src/errors.ts';
import { idReader } from '../../src/sync/page.ts';
import { PageSizes, pageProList } from '../../src/api/pro-pager.ts';
import { sweepDue } from '../../src/sync/readers/fan-out.ts';
import { horizon } from '../../src/sync/readers/capture.ts';

/** A Pro list of `total` records: `{ data }` pages of min(Limit, capAt) records; optionally ignoring Page. */
function server(total: number, options: { capAt?: number; ignoresPage?: boolean; bare?: boolean } = {}) {
  const requested: Array<{ page: number; limit: number }> = [];
  const fetchPage = async (page: number, limit: number): Promise<FetchedPage> => {
    requested.push({ page, limit });
    const size = Math.min(limit, options.capAt ?? Infinity);
    const from = options.ignoresPage ? 0 : (page - 1) * size;
    const data = Array.from({ length: Math.max(0, Math.min(size, total - from)) }, (_, i) => ({ id: from + i + 1 }));
    return { body: options.bare ? data : { data }, headers: {}, sentAt: new Date() };
  };
  return { fetchPage, requested };
}

async function read(s: ReturnType<typeof server>, limit: number, sizes = new PageSizes(limit)) {
  const warnings: string[] = [];
  const ids: number[] = [];
  for await (const page of pageProList(s.fetchPage, { limit, sizes, idOf: idReader('id'), warn: (m) => warnings.push(m) })) {
    ids.push(...page.records.map((r) => (r as { id: number }).id));
  }
  return { ids, pages: s.requested.map((r) => r.page), warnings, sizes };
}

describe('pageProList', () => {
  it('reads a list that is an exact multiple of the Limit, ending on the empty page after it', async () => {
    const r = await read(server(200), 100);
    expect(r.ids).toHaveLength(200);
    expect(r.pages).toEqual([1, 2, 3]);
    expect(r.warnings).toEqual([]);
  });

  it('reads an empty list with one request', async () => {
    const r = await read(server(0), 100);
    expect(r).toMatchObject({ ids: [], pages: [1] });
  });

  it('stops at a short page once a full page has shown the page size', async () => {
    const sizes = new PageSizes(100);
    await read(server(150), 100, sizes);
    expect(sizes.settled).toBe(true);
    const r = await read(server(7), 100, sizes);
    expect(r.pages).toEqual([1]);
  });

  it('checks the next page after an unexplained short page, once per size', async () => {
    const sizes = new PageSizes(100);
    const first = await read(server(7), 100, sizes);
    expect(first.pages).toEqual([1, 2]);
    // 5 < 7: the server served 7 on one page before, so 5 records is the end
    expect((await read(server(5), 100, sizes)).pages).toEqual([1]);
  });

  it('detects a server that caps Limit lower, reads everything, and names the page size to configure', async () => {
    const sizes = new PageSizes(100);
    const r = await read(server(130, { capAt: 40 }), 100, sizes);
    expect(r.ids).toEqual(Array.from({ length: 130 }, (_, i) => i + 1));
    expect(r.pages).toEqual([1, 2, 3, 4]);
    expect(r.warnings).toEqual([
      'the server serves at most 40 records per page although Limit=100 was asked; set "pageLimit": 40 for this source',
    ]);
    expect(sizes.cappedAt).toBe(40);
    // later lists of the same source page at 40 without checking again
    const next = await read(server(80, { capAt: 40 }), 100, sizes);
    expect(next.ids).toHaveLength(80);
    expect(next.pages).toEqual([1, 2, 3]);
    expect(next.warnings).toEqual([]);
  });

  it('ends a list whose server ignores Page instead of looping on the same records', async () => {
    const r = await read(server(100, { ignoresPage: true }), 100);
    expect(r.ids).toHaveLength(100);
    expect(r.pages).toEqual([1, 2]);
    expect(r.warnings).toEqual([expect.stringContaining('ignores Page')]);
  });

  it('accepts a bare array body and refuses a body without data', async () => {
    expect((await read(server(3, { bare: true }), 100)).ids).toEqual([1, 2, 3]);
    const bad = pageProList(async () => ({ body: { items: [] }, headers: {}, sentAt: new Date() }), {
      limit: 10,
      sizes: new PageSizes(10),
      idOf: idReader('id'),
      warn: () => undefined,
    });
    await expect(bad.next()).rejects.toThrow(PmsyncError);
  });
});

describe('PageSizes.verdict', () => {
  it('is "more" for full pages, "last" for empty ones and for pages shorter than any served, "check" otherwise', () => {
    const s = new PageSizes(50);
    expect(s.verdict(0)).toBe('last');
    expect(s.verdict(50)).toBe('more');
    expect(s.verdict(20)).toBe('check');
    s.observe(20);
    expect(s.verdict(19)).toBe('last');
    expect(s.verdict(20)).toBe('check');
    s.foundCap(20);
    expect(s.verdict(20)).toBe('more');
    expect(s.settled).toBe(true);
  });
});

describe('sweepDue and horizon', () => {
  const now = new Date('2026-11-22T12:00:00Z');
  it('sweeps when never swept, every run at 0 hours, or once the interval has passed', () => {
    expect(sweepDue(null, now, 24)).toBe(true);
    expect(sweepDue(new Date('2026-11-22T11:00:00Z'), now, 0)).toBe(true);
    expect(sweepDue(new Date('2026-11-21T13:00:00Z'), now, 24)).toBe(false);
    expect(sweepDue(new Date('2026-11-21T12:00:00Z'), now, 24)).toBe(true);
  });

  it('asks for slots from the capture date to horizonDays later (UTC dates)', () => {
    expect(horizon(new Date('2026-11-22T23:30:00Z'), 14)).toEqual({ start: '2026-11-22', end: '2026-12-06' });
  });
});
