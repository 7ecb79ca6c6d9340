import { mix32 } from './random.ts';

// Core record ids are opaque URL-safe strings. We encrypt (kind, index) with a
// small keyed Feistel network instead of storing ids, so a million records
// cost no id memory and an id resolves to its record in O(1).

const ALPHABET = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';
const DECODE = new Int8Array(128).fill(-1);
for (let i = 0; i < ALPHABET.length; i++) DECODE[ALPHABET.charCodeAt(i)] = i;

/** 64 bits in 11 base64url characters: ten of 6 bits and a last one of 4. */
const ID_LENGTH = 11;

export class IdCodec {
  private readonly keys: readonly number[];
  private readonly checkKey: number;

  constructor(key: number) {
    this.keys = [mix32(key ^ 0xa5a5a5a5), mix32(key ^ 0x3c3c3c3c), mix32(key ^ 0x5a5a5a5a), mix32(key ^ 0xc3c3c3c3)];
    this.checkKey = mix32(key ^ 0x0f0f0f0f);
  }

  encode(kind: number, index: number): string {
    let left = index >>> 0;
    let right = (((kind & 0xff) << 24) | (this.check(kind, index) & 0xffffff)) >>> 0;
    for (const key of this.keys) {
      const next = (left ^ mix32(right ^ key)) >>> 0;
      left = right;
      right = next;
    }
    return toBase64Url(left, right);
  }

  /** The record index behind `id`, or -1 when `id` is not an id of `kind`. */
  decode(kind: number, id: string): number {
    const words = fromBase64Url(id);
    if (words === undefined) return -1;
    let [left, right] = words;
    for (let k = this.keys.length - 1; k >= 0; k--) {
      const prior = (right ^ mix32(left ^ (this.keys[k] ?? 0))) >>> 0;
      right = left;
      left = prior;
    }
    const index = left;
    if (right >>> 24 !== kind) return -1;
    if ((right & 0xffffff) !== (this.check(kind, index) & 0xffffff)) return -1;
    return index;
  }

  private check(kind: number, index: number): number {
    return mix32(index ^ this.checkKey ^ Math.imul(kind, 0x27d4eb2d));
  }
}

function toBase64Url(high: number, low: number): string {
  let out = '';
  // 60 bits as ten 6-bit groups, then the last 4 bits.
  for (let shift = 26; shift >= 2; shift -= 6) out += ALPHABET[(high >>> shift) & 63];
  out += ALPHABET[((high & 3) << 4) | (low >>> 28)];
  for (let shift = 22; shift >= 4; shift -= 6) out += ALPHABET[(low >>> shift) & 63];
  out += ALPHABET[low & 15];
  return out;
}

function fromBase64Url(id: string): [number, number] | undefined {
  if (id.length !== ID_LENGTH) return undefined;
  const digits: number[] = [];
  for (let i = 0; i < ID_LENGTH; i++) {
    const code = id.charCodeAt(i);
    const digit = code < 128 ? (DECODE[code] ?? -1) : -1;
    if (digit < 0) return undefined;
    digits.push(digit);
  }
  const d = (i: number): number => digits[i] ?? 0;
  if (d(10) > 15) return undefined;
  let high = 0;
  for (let i = 0; i < 5; i++) high = (high << 6) | d(i);
  high = ((high << 2) | (d(5) >>> 4)) >>> 0;
  let low = d(5) & 15;
  for (let i = 6; i < 10; i++) low = (low << 6) | d(i);
  low = ((low << 4) | d(10)) >>> 0;
  return [high, low];
}
