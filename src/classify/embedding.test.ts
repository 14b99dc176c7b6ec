/**
 * The embedding signal with the real USE-lite model (offline, a few seconds): prototypes are built from
 * the category texts, and a record the rules say nothing about is decided by the embedding or abstains.
 */
import assert from "node:assert/strict";
import { afterAll, beforeAll, describe, it } from "vitest";
import { UseLiteEmbedder } from "../embed/use-lite.js";
import { embeddingText } from "../corpus/doc-text.js";
import { createClassifier, type Classifier } from "./classifier.js";
import { rec } from "../../test/support/test-records.js";

describe("embedding signal (USE-lite)", () => {
  let embedder: UseLiteEmbedder;
  let classifier: Classifier;
  beforeAll(async () => {
    embedder = await UseLiteEmbedder.load();
    classifier = await createClassifier(embedder);
  });
  afterAll(async () => embedder.close());

  // No cue word the rules know: no "agent", "LLM", "assistant", "tool"...
  const agentLike = rec("someone/errand", "Give it a goal and it plans the steps, browses the web and writes code on its own");
  const libraryLike = rec("someone/tinydate", "Parse, validate, manipulate and display dates and times in JavaScript");

  it("the rules alone abstain on these records", async () => {
    const rulesOnly = await createClassifier();
    assert.equal(rulesOnly.classify(agentLike).category, null);
    assert.equal(rulesOnly.classify(libraryLike).category, null);
  });

  it("an agent-like description becomes agent or stays uncategorized, never something else, consistently", async () => {
    const [v] = await embedder.embed([embeddingText(agentLike, { readmeChars: 0 })]);
    const first = classifier.classify(agentLike, v);
    assert.ok(first.category === "agent" || first.category === null, `got ${first.category} (${first.reason})`);
    if (first.category) assert.match(first.reason, /embedding/);
    assert.deepEqual(classifier.classify(agentLike, v), first);
  });

  it("rule evidence still decides when the embedding would disagree", async () => {
    const orm = rec("someone/tsorm", "A type-safe ORM for TypeScript and PostgreSQL");
    const [v] = await embedder.embed([embeddingText(agentLike, { readmeChars: 0 })]);
    assert.equal(classifier.classify(orm, v).category, "data");
  });

  it("the classifier id includes the embedder", async () => {
    assert.notEqual(classifier.id, (await createClassifier()).id);
  });
});
