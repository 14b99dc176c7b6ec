/**
 * A fixed-size set of row indices in Uint32 words. Filters are evaluated as set algebra on these,
 * so every operation is a tight loop over words; bits past `size` in the last word are kept at 0
 * (not() masks them) so count() and forEach() never see phantom rows.
 */
export class Bitset {
  readonly size: number;
  readonly words: Uint32Array;

  constructor(size: number, words?: Uint32Array) {
    if (!Number.isInteger(size) || size < 0) throw new RangeError(`Bitset size must be a non-negative integer, got ${size}`);
    const n = (size + 31) >>> 5;
    if (words !== undefined && words.length !== n) {
      throw new RangeError(`Bitset of size ${size} needs ${n} words, got ${words.length}`);
    }
    this.size = size;
    this.words = words ?? new Uint32Array(n);
  }

  static full(size: number): Bitset {
    const b = new Bitset(size);
    b.words.fill(0xffffffff);
    b.maskTail();
    return b;
  }

  static fromIndices(size: number, indices: Iterable<number>): Bitset {
    const b = new Bitset(size);
    for (const i of indices) b.set(i);
    return b;
  }

  set(i: number): void {
    this.check(i);
    this.words[i >>> 5]! |= 1 << (i & 31);
  }

  clear(i: number): void {
    this.check(i);
    this.words[i >>> 5]! &= ~(1 << (i & 31));
  }

  has(i: number): boolean {
    if (!(i >= 0 && i < this.size)) return false;
    return (this.words[i >>> 5]! & (1 << (i & 31))) !== 0;
  }

  /** Sets rows [from, to). */
  setRange(from: number, to: number): void {
    if (!(from >= 0 && to <= this.size && from <= to)) throw new RangeError(`bad range [${from}, ${to}) for size ${this.size}`);
    const w = this.words;
    while (from < to && (from & 31) !== 0) {
      w[from >>> 5]! |= 1 << (from & 31);
      from++;
    }
    while (from + 32 <= to) {
      w[from >>> 5] = 0xffffffff;
      from += 32;
    }
    while (from < to) {
      w[from >>> 5]! |= 1 << (from & 31);
      from++;
    }
  }

  /** In place; returns this. */
  and(o: Bitset): this {
    const a = this.words;
    const b = this.same(o).words;
    for (let i = 0; i < a.length; i++) a[i]! &= b[i]!;
    return this;
  }

  or(o: Bitset): this {
    const a = this.words;
    const b = this.same(o).words;
    for (let i = 0; i < a.length; i++) a[i]! |= b[i]!;
    return this;
  }

  andNot(o: Bitset): this {
    const a = this.words;
    const b = this.same(o).words;
    for (let i = 0; i < a.length; i++) a[i]! &= ~b[i]!;
    return this;
  }

  not(): this {
    const a = this.words;
    for (let i = 0; i < a.length; i++) a[i] = ~a[i]!;
    this.maskTail();
    return this;
  }

  clone(): Bitset {
    return new Bitset(this.size, this.words.slice());
  }

  count(): number {
    const a = this.words;
    let c = 0;
    for (let i = 0; i < a.length; i++) c += popcount32(a[i]!);
    return c;
  }

  /** |this ∩ o| without materialising the intersection. */
  andCount(o: Bitset): number {
    const a = this.words;
    const b = this.same(o).words;
    let c = 0;
    for (let i = 0; i < a.length; i++) c += popcount32(a[i]! & b[i]!);
    return c;
  }

  isEmpty(): boolean {
    const a = this.words;
    for (let i = 0; i < a.length; i++) if (a[i] !== 0) return false;
    return true;
  }

  equals(o: Bitset): boolean {
    if (o.size !== this.size) return false;
    const a = this.words;
    const b = o.words;
    for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
    return true;
  }

  /** Calls fn for every set bit in ascending order. */
  forEach(fn: (i: number) => void): void {
    const a = this.words;
    for (let wi = 0; wi < a.length; wi++) {
      let w = a[wi]!;
      const base = wi << 5;
      while (w !== 0) {
        const low = w & -w;
        fn(base + 31 - Math.clz32(low));
        w ^= low;
      }
    }
  }

  /** Writes the set rows in ascending order into `into` (room for count() of them); returns how many. */
  writeRows(into: Int32Array | Uint32Array): number {
    const a = this.words;
    let n = 0;
    for (let wi = 0; wi < a.length; wi++) {
      let w = a[wi]!;
      const base = wi << 5;
      while (w !== 0) {
        const low = w & -w;
        into[n++] = base + 31 - Math.clz32(low);
        w ^= low;
      }
    }
    return n;
  }

  /** The set rows in ascending order. */
  toArray(): Uint32Array {
    const out = new Uint32Array(this.count());
    let k = 0;
    this.forEach((i) => {
      out[k++] = i;
    });
    return out;
  }

  private maskTail(): void {
    const rem = this.size & 31;
    if (rem !== 0) this.words[this.words.length - 1]! &= (1 << rem) - 1;
  }

  private check(i: number): void {
    if (!(Number.isInteger(i) && i >= 0 && i < this.size)) throw new RangeError(`row ${i} out of range for Bitset of size ${this.size}`);
  }

  private same(o: Bitset): Bitset {
    if (o.size !== this.size) throw new RangeError(`Bitset sizes differ: ${this.size} vs ${o.size}`);
    return o;
  }
}

/** Number of set bits in a 32-bit word (SWAR popcount). */
export function popcount32(x: number): number {
  x -= (x >>> 1) & 0x55555555;
  x = (x & 0x33333333) + ((x >>> 2) & 0x33333333);
  x = (x + (x >>> 4)) & 0x0f0f0f0f;
  return Math.imul(x, 0x01010101) >>> 24;
}
