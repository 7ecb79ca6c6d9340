/**
 * Rows moving between pages while a window is read. A model listing serves
 * Page/Rows with Data* headers and changes between requests the way a fixed
 * ModifiedOn window does when records are modified (they leave it) or, rarely,
 * enter it. The real simulator version of this is test/e2e/drift.e2e.test.ts.
 */
import { describe, expect, it } from 'vitest';
import { pageByRows, type FetchedPage } from '../../src/api/pager.ts';

function rng(seed: number): () => number {
  let s = seed >>> 0 || 1;
  return () => {
    s = (Math.imul(s, 1_664_525) + 1_013_904_223) >>> 0;
    return s / 2 ** 32;
  };
}

class Listing {
  ids: number[];
  requests: number[] = [];
  private next: number;
  /** Called after each response with the positions it served. */
  afterPage: (served: { from: number; to: number }) => void = () => undefined;

  constructor(n: number) {
    this.ids = Array.from({ length: n }, (_, i) => i);
    this.next = n;
  }

  removeAt(position: number): void {
    this.ids.splice(position, 1);
  }

  insertAt(position: number): number {
    const id = this.next++;
    this.ids.splice(position, 0, id);
    return id;
  }

  fetch = async (page: number, rows: number): Promise<FetchedPage> => {
    this.requests.push(page);
    const size = Math.min(rows, 100);
    const from = (page - 1) * size;
    const body = this.ids.slice(from, from + size).map((id) => ({ id }));
    const total = this.ids.length;
    const pages = Math.ceil(total / size);
    const headers = {
      datatotalrows: String(total),
      datatotalpages: String(pages),
      datacurrentpage: String(page),
      datanextpage: String(Math.min(page + 1, Math.max(pages, 1))),
    };
    this.afterPage({ from, to: Math.min(from + size, total) });
    return { body, headers, sentAt: new Date() };
  };
}

async function readAll(listing: Listing, rows = 100): Promise<Set<number>> {
  const seen = new Set<number>();
  for await (const p of pageByRows(listing.fetch, { rows })) for (const r of p.records) seen.add((r as { id: number }).id);
  return seen;
}

describe('pageByRows under rows leaving the window while it is paged', () => {
  it('the scenario is real: reading forward skips rows that slid onto the page just read', async () => {
    const listing = new Listing(1_000);
    const original = [...listing.ids];
    listing.afterPage = ({ from, to }) => {
      if (to > from) listing.removeAt(from);
    };
    const seen = new Set<number>();
    for (let page = 1; ; page++) {
      const res = await listing.fetch(page, 100);
      const rows = res.body as Array<{ id: number }>;
      for (const r of rows) seen.add(r.id);
      if (rows.length < 100) break;
    }
    const removed = original.filter((id) => !listing.ids.includes(id));
    const missed = listing.ids.filter((id) => !seen.has(id));
    expect(removed.length).toBeGreaterThan(0);
    expect(missed.length).toBeGreaterThan(0);
  });

  for (let seed = 1; seed <= 10; seed++) {
    it(`seed ${seed}: records changed on every page served are all read, for one extra request`, async () => {
      const random = rng(seed);
      const n = 500 + Math.floor(random() * 3_000);
      const perPage = 1 + Math.floor(random() * 5);
      const listing = new Listing(n);
      listing.afterPage = ({ from, to }) => {
        for (let i = 0; i < perPage && to - from - i > 0; i++) listing.removeAt(from + Math.floor(random() * (to - from - i)));
      };
      const everyone = [...listing.ids];
      const seen = await readAll(listing);
      // Rows that left were all on pages already served, so every row was read at least once.
      expect(everyone.filter((id) => !seen.has(id))).toEqual([]);
      expect(listing.requests).toHaveLength(Math.ceil(n / 100) + 1);
      expect(listing.requests.at(-1)).toBe(1);
    });
  }

  for (let seed = 11; seed <= 20; seed++) {
    it(`seed ${seed}: rows leaving anywhere (deletions) never hide a row that stayed`, async () => {
      const random = rng(seed);
      const listing = new Listing(200 + Math.floor(random() * 2_000));
      listing.afterPage = () => {
        const k = Math.floor(random() * 4);
        for (let i = 0; i < k && listing.ids.length > 0; i++) listing.removeAt(Math.floor(random() * listing.ids.length));
      };
      const seen = await readAll(listing, 50);
      expect(listing.ids.filter((id) => !seen.has(id))).toEqual([]);
    });
  }

  for (let seed = 21; seed <= 30; seed++) {
    it(`seed ${seed}: rows entering below the read position are repaired by re-reading the pages they pushed rows into`, async () => {
      const random = rng(seed);
      const listing = new Listing(1_000 + Math.floor(random() * 1_000));
      const original = [...listing.ids];
      let inserts = 0;
      listing.afterPage = () => {
        if (inserts < 3 && random() < 0.2) {
          inserts++;
          listing.insertAt(Math.floor(random() * listing.ids.length));
        }
      };
      const seen = await readAll(listing);
      expect(original.filter((id) => !seen.has(id))).toEqual([]);
    });
  }

  it('a window that does not change costs exactly one request per page, page 1 read once', async () => {
    const listing = new Listing(1_234);
    const seen = await readAll(listing);
    expect(seen.size).toBe(1_234);
    expect(listing.requests).toEqual([1, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2]);
  });

  it('a window that emptied while it was read ends cleanly', async () => {
    const listing = new Listing(350);
    listing.afterPage = () => {
      listing.ids.splice(0, 120);
    };
    const gen = pageByRows(listing.fetch);
    let last = false;
    for await (const p of gen) last = p.last;
    expect(last).toBe(true);
    expect(listing.requests).toEqual([1, 4, 3, 2, 1]);
  });
});
