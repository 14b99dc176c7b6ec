/**
 * A WebAssembly SIMD kernel for the int8 scans of the dense planner (dense.ts boundedScan) and for
 * HNSW construction (engine-hnsw-build.ts, which takes a row as the query with loadRow): the dot
 * products of one int8 query code with many int8 rows. V8 runs the same loop in JavaScript at about
 * 200 ns a row of 128 dims (int8 typed-array reads and integer multiplies do not vectorise); the SIMD
 * loop takes about 20 ns. Everything else of the scan (bounds, heap) stays in TypeScript.
 *
 * Each prepared segment (and payload subgraph) gets its own instance whose memory holds that
 * segment's codes, so the codes are quantised straight into it and are freed with the segment.
 * Where WebAssembly SIMD is missing (or dims is not a multiple of 16) `Int8Scanner.create` returns
 * null and scans keep the JavaScript loop. Source: int8-kernel.wat (`node scripts/build-wasm.mjs`).
 */

// The project compiles against lib ES2023 without the DOM, which is where TypeScript declares
// WebAssembly; the part used here, as Node provides it.
// eslint-disable-next-line @typescript-eslint/no-namespace -- declares a global namespace, as lib.dom does
declare namespace WebAssembly {
  class Module {
    constructor(bytes: Uint8Array);
  }
  class Memory {
    constructor(descriptor: { initial: number; maximum?: number });
    readonly buffer: ArrayBuffer;
  }
  class Instance {
    constructor(module: Module, imports: Record<string, Record<string, unknown>>);
    readonly exports: Record<string, unknown>;
  }
  function validate(bytes: Uint8Array): boolean;
}

/** int8-kernel.wat, compiled. */
export const INT8_KERNEL_WASM_BASE64 =
  "AGFzbQEAAAABEAJgBn9/f39/fwBgA39/fwACDwEDZW52Bm1lbW9yeQIAAQMDAgABBxACBGRvdHMAAAV3aWRlbgABCoECArQBAgR/AnsCQANAIAYgBE8NASABIAMgBkECdGooAgAgAmxqIQf9DAAAAAAAAAAAAAAAAAAAAAAhCkEAIQggACEJA0AgByAIav0ABAAhCyAKIAv9hwEgCf0ABAD9ugH9rgEgC/2IASAJ/QAEEP26Af2uASEKIAlBIGohCSAIQRBqIgggAkkNAAsgBSAGQQJ0aiAK/RsAIAr9GwFqIAr9GwIgCv0bA2pqNgIAIAZBAWohBgwACwsLSQIBfwF7AkADQCADIAJPDQEgACADav0ABAAhBCABIANBAXRqIAT9hwH9CwQAIAEgA0EBdGogBP2IAf0LBBAgA0EQaiEDDAALCws=";

const PAGE_BYTES = 65_536;
const MAX_PAGES = 65_536;
/** The kernel's i32 sum of dims products of at most 127² each overflows past this. */
const MAX_DIMS = 133_000;

let compiled: WebAssembly.Module | null | undefined;

/** The compiled kernel, or null where this runtime lacks WebAssembly SIMD. */
function kernelModule(): WebAssembly.Module | null {
  if (compiled === undefined) {
    const bytes = Buffer.from(INT8_KERNEL_WASM_BASE64, "base64");
    compiled = typeof WebAssembly === "object" && WebAssembly.validate(bytes) ? new WebAssembly.Module(bytes) : null;
  }
  return compiled;
}

/**
 * The largest |query code| for which the kernel's i32 sums cannot overflow: dims products of at most
 * code × 127 each (32,767 for up to 516 dims).
 */
export function queryCodeMax(dims: number): number {
  return Math.max(1, Math.min(32_767, Math.floor(0x7fffffff / (dims * 127))));
}

/** Whether scans can use the SIMD kernel in this runtime. */
export function int8KernelAvailable(): boolean {
  return kernelModule() !== null;
}

type DotsFn = (q: number, codes: number, dims: number, rows: number, n: number, out: number) => void;
type WidenFn = (src: number, dst: number, dims: number) => void;

/**
 * Int8 rows in WebAssembly memory plus scratch for one scan: load() the query code, fill `rows`
 * with up to `count` row numbers, call dots(), read `out`. Not reentrant (searches are synchronous).
 */
export class Int8Scanner {
  /** count × dims codes, row-major; quantise into this view (it is the kernel's memory). */
  readonly codes: Int8Array;
  /** Row numbers of one scan; the caller writes the first n. */
  readonly rows: Int32Array;
  /** The n dot products of the last dots() call. */
  readonly out: Int32Array;
  private readonly query: Int16Array;
  private readonly fn: DotsFn;
  private readonly widen: WidenFn;
  private readonly offsets: { readonly query: number; readonly rows: number; readonly out: number };

  private constructor(
    readonly count: number,
    readonly dims: number,
    memory: WebAssembly.Memory,
    fn: DotsFn,
    widen: WidenFn,
  ) {
    const codesBytes = count * dims;
    const query = align16(codesBytes);
    const rows = align16(query + dims * 2);
    const out = align16(rows + count * 4);
    this.offsets = { query, rows, out };
    this.codes = new Int8Array(memory.buffer, 0, codesBytes);
    this.query = new Int16Array(memory.buffer, query, dims);
    this.rows = new Int32Array(memory.buffer, rows, count);
    this.out = new Int32Array(memory.buffer, out, count);
    this.fn = fn;
    this.widen = widen;
  }

  /** A scanner for count rows of dims, or null when the kernel cannot serve them (no SIMD; dims not a multiple of 16). */
  static create(count: number, dims: number): Int8Scanner | null {
    if (!Number.isInteger(count) || count < 0 || !Number.isInteger(dims) || dims < 16 || dims % 16 !== 0 || dims > MAX_DIMS) return null;
    const mod = kernelModule();
    if (mod === null) return null;
    const bytes = align16(align16(align16(count * dims) + dims * 2) + count * 4) + count * 4;
    const pages = Math.max(1, Math.ceil(bytes / PAGE_BYTES));
    // A 32-bit memory holds at most 4 GiB: bigger segments keep the JavaScript loop.
    if (pages > MAX_PAGES) return null;
    // Fixed size: views over the buffer stay valid because the memory never grows.
    const memory = new WebAssembly.Memory({ initial: pages, maximum: pages });
    const instance = new WebAssembly.Instance(mod, { env: { memory } });
    return new Int8Scanner(count, dims, memory, instance.exports.dots as DotsFn, instance.exports.widen as WidenFn);
  }

  /**
   * Sets the query code that dots() multiplies with (a walk loads it once and calls dots() per node):
   * int8, or int16 up to queryCodeMax(dims) per component.
   */
  load(queryCode: Int8Array | Int16Array): void {
    if (queryCode.length < this.dims) throw new RangeError(`Int8Scanner.load: query code has ${queryCode.length} dims, rows have ${this.dims}`);
    const q = this.query;
    for (let i = 0; i < this.dims; i++) q[i] = queryCode[i]!;
  }

  /** Sets one of the scanner's own rows as the query code (HNSW construction scores rows against rows). */
  loadRow(row: number): void {
    if (!(row >= 0 && row < this.count)) throw new RangeError(`Int8Scanner.loadRow: row must be in [0, ${this.count}) (got ${row})`);
    this.widen(row * this.dims, this.offsets.query, this.dims);
  }

  /** out[i] = Σ_j query[j] · codes[rows[i] · dims + j] for i < n, with the query of the last load(). */
  dots(n: number): void {
    if (!(n >= 0 && n <= this.count)) throw new RangeError(`Int8Scanner.dots: n must be in [0, ${this.count}] (got ${n})`);
    this.fn(this.offsets.query, 0, this.dims, this.offsets.rows, n | 0, this.offsets.out);
  }
}

function align16(x: number): number {
  return Math.ceil(x / 16) * 16;
}
