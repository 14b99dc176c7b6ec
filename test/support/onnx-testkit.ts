/**
 * For tests of the ONNX models (embedder, reranker): a minimal protobuf writer for hand-encoding tiny
 * ONNX graphs, and temp model directories holding such a graph next to the real MiniLM tokenizer
 * files. Test support only; nothing in the service imports it.
 */
import { copyFileSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { Tokenizer } from "@huggingface/tokenizers";

/** tokenizer.json and tokenizer_config.json of all-MiniLM-L6-v2 (a BERT WordPiece vocabulary). */
export const TOKENIZER_DIR = "/work/shared/models/tokenizers-only/all-MiniLM-L6-v2";
export const VOCAB = 30522;

// ---- a minimal protobuf writer: just the wire types ONNX needs ----
export type Field = Uint8Array;
function varint(n: number | bigint): number[] {
  let v = BigInt.asUintN(64, BigInt(n));
  const out: number[] = [];
  do {
    let byte = Number(v & 0x7fn);
    v >>= 7n;
    if (v > 0n) byte |= 0x80;
    out.push(byte);
  } while (v > 0n);
  return out;
}
const key = (field: number, wire: number) => varint((field << 3) | wire);
export const int = (field: number, n: number | bigint): Field => Uint8Array.from([...key(field, 0), ...varint(n)]);
export function bytes(field: number, data: Uint8Array | string | Field[]): Field {
  const body = typeof data === "string" ? new TextEncoder().encode(data) : Array.isArray(data) ? Buffer.concat(data) : data;
  return Buffer.concat([Uint8Array.from([...key(field, 2), ...varint(body.length)]), body]);
}
export const msg = (...fields: Field[]): Field[] => fields;

// ---- ONNX messages (onnx.proto field numbers) ----
export const TYPE_FLOAT = 1;
export const TYPE_INT64 = 7;
/** ValueInfoProto { name=1, type=2: TypeProto { tensor_type=1: { elem_type=1, shape=2: { dim=1: {dim_value=1 | dim_param=2} } } } } */
export function valueInfo(name: string, elemType: number, shape: (number | string)[]): Field[] {
  const dims = shape.map((d) => bytes(1, typeof d === "number" ? [int(1, d)] : [bytes(2, d)]));
  return msg(bytes(1, name), bytes(2, [bytes(1, [int(1, elemType), bytes(2, dims)])]));
}
/** NodeProto { input=1, output=2, name=3, op_type=4, attribute=5 } */
export function node(op: string, inputs: string[], outputs: string[], attrs: Field[][] = []): Field[] {
  return msg(
    ...inputs.map((i) => bytes(1, i)),
    ...outputs.map((o) => bytes(2, o)),
    bytes(3, `${op}_${outputs[0]}`),
    bytes(4, op),
    ...attrs.map((a) => bytes(5, a)),
  );
}
/** AttributeProto { name=1, i=3, ints=8, type=20 (INT=2, INTS=7) } */
export const attrInt = (name: string, v: number) => msg(bytes(1, name), int(3, v), int(20, 2));
export const attrInts = (name: string, vs: number[]) => msg(bytes(1, name), ...vs.map((v) => int(8, v)), int(20, 7));
/** TensorProto { dims=1, data_type=2, name=8, raw_data=9 } */
export function tensor(name: string, type: number, dims: number[], data: Float32Array | BigInt64Array): Field[] {
  return msg(...dims.map((d) => int(1, d)), int(2, type), bytes(8, name), bytes(9, new Uint8Array(data.buffer, data.byteOffset, data.byteLength)));
}
/** ModelProto { ir_version=1, producer_name=2, graph=7, opset_import=8: { domain=1, version=2 } }, opset 13. */
export function modelProto(graph: Field[]): Uint8Array {
  return Buffer.concat(msg(int(1, 8), bytes(2, "reposearch-test"), bytes(7, graph), bytes(8, [bytes(1, ""), int(2, 13)])));
}

/** The MiniLM tokenizer, loaded independently of the code under test, to compute expectations. */
export function referenceTokenizer(): Tokenizer {
  return new Tokenizer(
    JSON.parse(readFileSync(path.join(TOKENIZER_DIR, "tokenizer.json"), "utf8")) as object,
    JSON.parse(readFileSync(path.join(TOKENIZER_DIR, "tokenizer_config.json"), "utf8")) as object,
  );
}

/** Model directories under one temp root; call remove() when the tests are done. */
export class TempModelDirs {
  readonly root: string;
  private count = 0;

  constructor(prefix: string) {
    this.root = mkdtempSync(path.join(tmpdir(), prefix));
  }

  /** A new directory (`name`, or numbered) with `model` as model.onnx (onnx/model.onnx when nested) and the real tokenizer files. */
  create(model: Uint8Array, opts: { name?: string; nested?: boolean } = {}): string {
    const dir = path.join(this.root, opts.name ?? `model-${++this.count}`);
    mkdirSync(opts.nested ? path.join(dir, "onnx") : dir, { recursive: true });
    writeFileSync(path.join(dir, opts.nested ? "onnx/model.onnx" : "model.onnx"), model);
    for (const f of ["tokenizer.json", "tokenizer_config.json"]) copyFileSync(path.join(TOKENIZER_DIR, f), path.join(dir, f));
    return dir;
  }

  remove(): void {
    rmSync(this.root, { recursive: true, force: true });
  }
}
