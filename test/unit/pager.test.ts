import { describe, expect, it } from 'vitest';
import { pageByRows, pagesLeft, type FetchedPage } from '../../src/api/pager.ts';

/** A list of `total` records served like the Core API: Rows clamped to 100, optional Data* headers. */
function server(total: number, options: { headers?: boolean; clampTo?: number } = {}) {
  const requested: Array<{ page: number; rows: number }> = [];
  const fetchPage = async (page: number, rows: number): Promise<FetchedPage> => {
    requested.push({ page, rows });
    const size = Math.min(rows, options.clampTo ?? 100);
    const body = Array.from({ length: Math.max(0, Math.min(size, total - (page - 1) * size)) }, (_, i) => ({ n: (page - 1) * size + i }));
    const totalPages = Math.ceil(total / size);
    const headers: FetchedPage['headers'] =
      options.headers === false
        ? {}
        : {
            datatotalrows: String(total),
            datatotalpages: String(totalPages),
            datacurrentpage: String(page),
            datanextpage: String(Math.min(page + 1, Math.max(totalPages, 1))),
            datapriorpage: String(Math.max(page - 1, 1)),
          };
    return { body, headers, sentAt: new Date() };
  };
  return { fetchPage, requested };
}

async function collect(gen: AsyncGenerator<{ records: unknown[] }>): Promise<number> {
  let n = 0;
  for await (const p of gen) n += p.records.length;
  return n;
}

describe('pageByRows', () => {
  it('with Data* headers reads page 1, then the last page down to 2, and stops (DataNextPage is never a stop signal)', async () => {
    const s = server(250);
    expect(await collect(pageByRows(s.fetchPage))).toBe(250);
    expect(s.requested.map((r) => r.page)).toEqual([1, 3, 2]);
    expect(s.requested.every((r) => r.rows === 100)).toBe(true);
  });

  it('uses exactly ceil(n/100) requests for an exact multiple when headers are present', async () => {
    const s = server(20_000);
    expect(await collect(pageByRows(s.fetchPage))).toBe(20_000);
    expect(s.requested).toHaveLength(200);
  });

  it('without headers, stops at the first short page', async () => {
    const s = server(250, { headers: false });
    expect(await collect(pageByRows(s.fetchPage))).toBe(250);
    expect(s.requested).toHaveLength(3);
  });

  it('without headers, an exact multiple costs one extra (empty) page', async () => {
    const s = server(300, { headers: false });
    expect(await collect(pageByRows(s.fetchPage))).toBe(300);
    expect(s.requested).toHaveLength(4);
  });

  it('treats Rows above 100 as clamped: 100 rows of a 150-row request is not a short page', async () => {
    const s = server(450, { headers: false });
    expect(await collect(pageByRows(s.fetchPage, { rows: 150 }))).toBe(450);
    expect(s.requested).toHaveLength(5);
  });

  it('reads nothing more after an empty first page', async () => {
    const s = server(0);
    expect(await collect(pageByRows(s.fetchPage))).toBe(0);
    expect(s.requested).toHaveLength(1);
  });

  it('resumes forward from a given page (checkpoints written before the pager kept its state)', async () => {
    const s = server(350);
    expect(await collect(pageByRows(s.fetchPage, { startPage: 3 }))).toBe(150);
    expect(s.requested.map((r) => r.page)).toEqual([3, 4]);
  });

  it('resumes from a saved state exactly where it stopped', async () => {
    const s = server(450);
    const gen = pageByRows(s.fetchPage);
    await gen.next();
    const second = await gen.next();
    const saved = second.value!.state;
    expect(saved).toMatchObject({ order: 'backward', nextPage: 4, totalPages: 5, pagesRead: 2 });
    expect(pagesLeft(saved)).toBe(3);
    const rest = server(450);
    expect(await collect(pageByRows(rest.fetchPage, { state: saved }))).toBe(300);
    expect(rest.requested.map((r) => r.page)).toEqual([4, 3, 2]);
  });

  it('refuses a body that is not an array', async () => {
    const gen = pageByRows(async () => ({ body: { data: [] }, headers: {}, sentAt: new Date() }));
    await expect(gen.next()).rejects.toThrow(/not a JSON array/);
  });
});
