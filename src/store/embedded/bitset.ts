// STUB: replaced by the store-engine work. Signatures are the contract.
export class Bitset {
  readonly size: number;
  readonly words: Uint32Array;
  constructor(size: number, words?: Uint32Array) {
    this.size = size;
    this.words = words ?? new Uint32Array((size + 31) >>> 5);
  }
  static full(size: number): Bitset { throw new Error("not implemented"); }
  static fromIndices(size: number, indices: Iterable<number>): Bitset { throw new Error("not implemented"); }
  set(i: number): void { throw new Error("not implemented"); }
  clear(i: number): void { throw new Error("not implemented"); }
  has(i: number): boolean { throw new Error("not implemented"); }
  /** In place; returns this. */
  and(o: Bitset): this { throw new Error("not implemented"); }
  or(o: Bitset): this { throw new Error("not implemented"); }
  andNot(o: Bitset): this { throw new Error("not implemented"); }
  not(): this { throw new Error("not implemented"); }
  clone(): Bitset { throw new Error("not implemented"); }
  count(): number { throw new Error("not implemented"); }
  forEach(fn: (i: number) => void): void { throw new Error("not implemented"); }
}
