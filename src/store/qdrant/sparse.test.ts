import assert from "node:assert/strict";
import { describe, it } from "vitest";
import { fnv1a32 } from "../../common/hash.js";
import { seededRandom } from "../../common/random.js";
import { analyze } from "../../text/analyzer.js";
import { DEFAULT_LEXICAL_PARAMS, LEXICAL_FIELDS, LexicalIndex, type LexicalDoc, type LexicalField } from "../embedded/lexical.js";
import {
  DEFAULT_SPARSE_LEXICAL_PARAMS,
  fieldTokens,
  lexicalDocVector,
  lexicalQueryVector,
  sparseIdf,
  sparseVectorProblem,
  type SparseLexicalParams,
  type SparseVector,
} from "./sparse.js";

const WORDS = "vector search engine rust python web server fast database graph neural network parser cli tool library async runtime http client".split(" ");

function docs(n: number): LexicalDoc[] {
  const r = seededRandom(42);
  const pick = () => WORDS[Math.floor(r() * WORDS.length)]!;
  const words = (k: number) => Array.from({ length: k }, pick).join(" ");
  return Array.from({ length: n }, (_, i) => ({
    name: `owner${i % 7}/${pick()}-${pick()}`,
    description: r() < 0.1 ? null : `A ${words(3 + Math.floor(r() * 10))}.`,
    topics: r() < 0.6 ? [] : [pick(), pick()],
    readme: r() < 0.8 ? null : `# ${pick()}\n\n${words(20 + Math.floor(r() * 40))}`,
  }));
}

/** Qdrant's scoring of a sparse query with the idf modifier, by brute force. */
function qdrantScores(vectors: readonly SparseVector[], q: SparseVector): number[] {
  const df = new Map<number, number>();
  for (const v of vectors) for (const i of v.indices) df.set(i, (df.get(i) ?? 0) + 1);
  return vectors.map((v) => {
    let s = 0;
    q.indices.forEach((t, k) => {
      const j = v.indices.indexOf(t);
      if (j >= 0) s += q.values[k]! * sparseIdf(vectors.length, df.get(t)!) * v.values[j]!;
    });
    return s;
  });
}

describe("lexical sparse vectors", () => {
  it("score exactly like the embedded BM25F index when given the corpus's average field lengths", () => {
    const corpus = docs(120);
    const avgLength = {} as Record<LexicalField, number>;
    for (const f of LEXICAL_FIELDS) {
      const lens = corpus.map((d) => fieldTokens(d, f).length).filter((l) => l > 0);
      avgLength[f] = lens.length ? lens.reduce((a, b) => a + b, 0) / lens.length : 1;
    }
    const params: SparseLexicalParams = { ...DEFAULT_LEXICAL_PARAMS, avgLength };
    const vectors = corpus.map((d) => lexicalDocVector(d, params));
    const index = LexicalIndex.build(corpus);
    for (const text of ["vector search", "rust web server", "graph neural network parser", "owner3 async", "database database client", "fast-http client"]) {
      const expected = index.search(text, corpus.length, null);
      const scores = qdrantScores(vectors, lexicalQueryVector(text));
      assert.ok(expected.length > 0);
      assert.equal(scores.filter((s) => s > 0).length, expected.length, `${text}: matching documents`);
      for (const h of expected)
        assert.ok(Math.abs(scores[h.idx]! - h.score) <= 1e-4 * Math.max(1, h.score), `${text}: doc ${h.idx} ${scores[h.idx]} vs ${h.score}`);
    }
  });

  it("a document vector has unique ascending u32 term ids and positive weights; a termless document is empty", () => {
    const v = lexicalDocVector({
      name: "tokio-rs/tokio",
      description: "A runtime for writing reliable asynchronous applications with Rust. Rust!",
      topics: ["rust", "async"],
      readme: null,
    });
    assert.ok(v.indices.length > 3);
    assert.equal(v.indices.length, v.values.length);
    for (let i = 1; i < v.indices.length; i++) assert.ok(v.indices[i]! > v.indices[i - 1]!);
    for (const x of v.values) assert.ok(x > 0 && x < DEFAULT_SPARSE_LEXICAL_PARAMS.k1 + 1);
    assert.ok(v.indices.includes(fnv1a32("rust")));
    assert.equal(sparseVectorProblem(v), null);
    assert.deepEqual(lexicalDocVector({ name: "", description: null, topics: [], readme: null }), { indices: [], values: [] });
    assert.deepEqual(
      lexicalDocVector({ name: "a/b", description: "x", topics: [], readme: null }),
      lexicalDocVector({ name: "a/b", description: "x", topics: [], readme: null }),
    );
  });

  it("a query vector weighs each written word 1, shared by the terms the analyser makes of it", () => {
    const q = lexicalQueryVector("Parsers parse; the PARSER");
    const terms = analyze("Parsers parse; the PARSER");
    assert.equal(
      q.values.reduce((a, b) => a + b, 0),
      terms.length,
    );
    // "fast-http" is one word of three terms (fast, http, fasthttp): a third each.
    const hyphen = lexicalQueryVector("fast-http client");
    assert.deepEqual([...hyphen.values].sort(), [1 / 3, 1 / 3, 1 / 3, 1].sort());
    assert.deepEqual(lexicalQueryVector("the of and"), { indices: [], values: [] });
  });

  it("sparseVectorProblem names what Qdrant would refuse", () => {
    assert.match(String(sparseVectorProblem(null)), /object/);
    assert.match(String(sparseVectorProblem({ indices: [1, 2], values: [1] })), /2 indices but 1 values/);
    assert.match(String(sparseVectorProblem({ indices: [1, 1], values: [1, 1] })), /repeated/);
    assert.match(String(sparseVectorProblem({ indices: [-1], values: [1] })), /u32/);
    assert.match(String(sparseVectorProblem({ indices: [1], values: [Infinity] })), /finite/);
  });
});
