import assert from "node:assert/strict";
import { describe, it } from "vitest";
import { CATEGORIES, type Category } from "../dataset/record.js";
import type { Embedder } from "../embed/types.js";
import { createClassifier, PROTOTYPE_TEXTS } from "./classifier.js";
import { rec } from "../../test/support/test-records.js";

const rules = await createClassifier();
const categoryOf = (name: string, description: string | null, extra = {}) => rules.classify(rec(name, description, extra)).category;

describe("rules: representative repositories", () => {
  const cases: [string, string, string | null, Record<string, unknown>?][] = [
    [
      "curated-list",
      "someone/awesome-rust-gamedev",
      "A curated list of awesome Rust game development libraries, tools and resources",
      { topics: ["awesome-list", "rust"] },
    ],
    ["curated-list", "someone/awesome-kubernetes", "Kubernetes operators, tools, articles and talks worth knowing"],
    ["curated-list", "someone/ml-papers", "A list of papers on machine learning for compilers"],
    ["educational", "someone/flask-api-tutorial", "A step-by-step tutorial on building a REST API with Flask"],
    ["educational", "someone/go-in-30-days", "Learn Go in 30 days, one small program a day"],
    ["educational", "someone/30-days-of-python", "30 days of Python programming challenge"],
    ["educational", "someone/programming-elixir", "Code and exercises for the book Programming Elixir"],
    ["educational", "someone/ds-course", "Materials for the Data Structures course at Example University"],
    ["educational", "someone/system-design-notes", "Interview questions and study notes for system design interviews"],
    ["tool", "someone/logsift", "A fast command-line tool for searching structured logs"],
    ["tool", "someone/fmtx", "Opinionated code formatter and linter for YAML"],
    ["frontend", "someone/react-ui", "A React UI kit with accessible, themeable components"],
    ["data", "someone/tsorm", "A type-safe ORM for TypeScript and PostgreSQL"],
    ["starter", "someone/next-tailwind-boilerplate", "Boilerplate for Next.js apps with Tailwind CSS, tests and CI"],
    ["starter", "someone/python-package-template", "Project template for Python packages"],
    ["plugin", "someone/vscode-foo", "Visual Studio Code extension adding language support for Foo"],
    ["plugin", "someone/telescope-files.nvim", "Fuzzy file finder for Neovim"],
    ["agent", "someone/toolsmith", "A framework for building LLM agents that call tools and keep memory"],
    ["agent", "someone/pg-mcp", "MCP server that lets AI assistants query PostgreSQL"],
    ["infrastructure", "someone/pg-operator", "Kubernetes operator for running highly available PostgreSQL clusters"],
    ["application", "someone/photovault", "Self-hosted photo management application with face search"],
    ["ai-ml", "someone/tinygrad-lite", "Deep learning library for training neural networks on GPUs"],
    ["library", "someone/fastjson", "High-performance JSON parsing library for Go"],
  ];
  for (const [want, name, description, extra] of cases) {
    it(`${want}: ${name}`, () => {
      assert.equal(categoryOf(name, description, extra ?? {}), want);
    });
  }
});

describe("rules: precision of the hidden categories", () => {
  it("a library that mentions examples or a tutorial in passing stays a library", () => {
    assert.equal(categoryOf("someone/chrono-js", "Date and time library for JavaScript, with examples and a tutorial"), "library");
    assert.equal(categoryOf("someone/ws", "A WebSocket client library for Rust. See the docs for a tutorial."), "library");
  });
  it("a tool that mentions a list or learning is not a list or a tutorial", () => {
    assert.notEqual(categoryOf("someone/lsdeps", "A CLI that prints a list of the dependencies of a project"), "curated-list");
    assert.notEqual(categoryOf("someone/sk", "A machine learning library built on scikit-learn"), "educational");
  });
  it("an awesome-named library (no separator) is not taken for a list", () => {
    assert.notEqual(categoryOf("someone/AwesomeSlider", "A slider component for iOS"), "curated-list");
  });
  it("'awesome-' plus a singular software noun stays software", () => {
    assert.equal(categoryOf("someone/awesome-cli", "A simple command line tool to browse awesome lists"), "tool");
  });
  it("a learning word that modifies a software noun names what the software handles", () => {
    assert.equal(categoryOf("someone/navi", "An interactive cheatsheet tool for the command-line"), "tool");
    assert.notEqual(categoryOf("someone/sigil", "Sigil is a multi-platform EPUB ebook editor"), "educational");
    // the same words as the head are still what the repository is
    assert.equal(categoryOf("someone/cheats", "Interactive cheatsheets for the command-line"), "educational");
    // a plural after it is a list of things ("Tutorials, tools, and more"), not a modifier
    assert.equal(categoryOf("someone/game-hacking", "Tutorials, tools, and more as related to reverse engineering video games"), "educational");
  });
  it("a workshop or demo at a research venue is where a paper appeared, not a course", () => {
    assert.notEqual(categoryOf("someone/esrgan", "ECCV18 Workshops - Enhanced SRGAN. Champion PIRM Challenge on Perceptual Super-Resolution"), "educational");
    assert.notEqual(categoryOf("someone/pdf-translate", "[EMNLP 2025 Demo] PDF scientific paper translation with preserved formats"), "educational");
    assert.equal(categoryOf("someone/pycon-ts", "PyCon 2017 tutorial on time series analysis"), "educational");
  });
  it("topics alone never hide: the repository's own words must say list or course too", () => {
    const hidden = new Set<Category | null>(["curated-list", "educational"]);
    assert.ok(!hidden.has(categoryOf("someone/grist", "Grist is the evolution of spreadsheets.", { topics: ["awesome", "database"] })));
    assert.ok(!hidden.has(categoryOf("someone/circuit", "A Python implementation for microcontrollers", { topics: ["education", "beginner"] })));
    // the same topics beside a description that names a list or course still hide
    assert.equal(categoryOf("someone/go-links", "Links to Go resources", { topics: ["awesome", "awesome-list"] }), "curated-list");
    assert.equal(categoryOf("someone/k8s-course", "Course materials for Kubernetes", { topics: ["education"] }), "educational");
  });
  it("a workshop or playground that makes something is a tool, not a course", () => {
    assert.notEqual(categoryOf("someone/storybook", "The industry standard workshop for building, documenting, and testing UI components"), "educational");
    assert.notEqual(categoryOf("someone/dalle-playground", "A playground to generate images from any text prompt"), "educational");
    assert.equal(categoryOf("someone/testing-workshop", "A workshop for learning how to test JavaScript applications"), "educational");
    assert.equal(categoryOf("someone/agents-tutorials", "Tutorials for building production-grade AI agents"), "educational");
  });
  it("'build your own' alone is a product's slogan; with a guide or course around it, teaching", () => {
    assert.notEqual(categoryOf("someone/titiler", "Build your own raster dynamic map tile services"), "educational");
    assert.equal(categoryOf("someone/diy-cnc", "How to build your own CNC machine from scratch"), "educational");
    assert.equal(categoryOf("someone/build-your-own-x", "Build your own (insert technology here)"), "educational");
  });
  it("a list or course noun far into a product's description is a use, not what it is", () => {
    const swe =
      "SWE-agent takes a GitHub issue and tries to automatically fix it, using your LM of choice. It can also be employed for offensive cybersecurity or competitive coding challenges.";
    assert.notEqual(categoryOf("someone/swe-agent", swe), "educational");
    assert.equal(categoryOf("someone/go-challenges", "Coding challenges for Go developers, with solutions"), "educational");
  });
  it("a description that opens as a list of resources is a list; a tool that handles a list of things is not", () => {
    assert.equal(categoryOf("someone/gobooks", "List of Golang books"), "curated-list");
    assert.equal(categoryOf("someone/ql-plugins", "List of useful Quick Look plugins for developers"), "curated-list");
    assert.notEqual(categoryOf("someone/ffmpeg-concat", "Concats a list of videos together using ffmpeg with OpenGL transitions"), "curated-list");
    assert.notEqual(categoryOf("someone/dorker", "SuperDorker gives you a huge list of websites from Google dorks"), "curated-list");
    // the name's plural nouns are then the list's items, as in an awesome-* repository
    assert.equal(
      categoryOf("someone/open-source-ios-apps", "Collaborative List of Open-Source iOS Apps", { topics: ["ios", "awesome", "app", "game"] }),
      "curated-list",
    );
    assert.equal(categoryOf("someone/ios-apps", "iOS apps for reading RSS feeds", { topics: ["ios", "app"] }), "application");
  });
});

describe("rules: abstention and determinism", () => {
  it("abstains on empty or unknown text", () => {
    for (const r of [rec("someone/x", null), rec("someone/thing", "Just some stuff I made"), rec("someone/y", "")]) {
      const c = rules.classify(r);
      assert.equal(c.category, null);
      assert.equal(c.confidence, 0);
      assert.match(c.reason, /abstain/);
    }
  });
  it("gives the same answer every time, across instances", async () => {
    const other = await createClassifier();
    assert.equal(other.id, rules.id);
    const r = rec("someone/awesome-go", "A curated list of awesome Go frameworks", { topics: ["awesome", "go"] });
    assert.deepEqual(rules.classify(r), other.classify(r));
    assert.deepEqual(rules.classify(r), rules.classify(r));
  });
  it("reports a confidence in (0, 1] and the cues that decided", () => {
    const c = rules.classify(rec("someone/rust-book-examples", "Examples from the Rust book"));
    assert.equal(c.category, "educational");
    assert.ok(c.confidence > 0 && c.confidence <= 1);
    assert.match(c.reason, /educational/);
  });
});

/** One-hot vectors: each prototype text maps to its category's axis, so prototypes are the unit axes. */
function fakeEmbedder(id = "fake@1"): Embedder {
  const axis = new Map<string, number>();
  CATEGORIES.forEach((c, i) => PROTOTYPE_TEXTS[c].forEach((t) => axis.set(t, i)));
  return {
    id,
    dims: CATEGORIES.length,
    async embed(texts) {
      return texts.map((t) => {
        const v = new Float32Array(CATEGORIES.length);
        v[axis.get(t) ?? 0] = 1;
        return v;
      });
    },
    async close() {},
  };
}
const unit = (c: Category, dims: number = CATEGORIES.length) => {
  const v = new Float32Array(dims);
  v[CATEGORIES.indexOf(c)] = 1;
  return v;
};

describe("embedding signal (fake embedder)", async () => {
  const withEmb = await createClassifier(fakeEmbedder());

  it("changes the id with the embedder", async () => {
    assert.notEqual(withEmb.id, rules.id);
    assert.notEqual((await createClassifier(fakeEmbedder("fake@2"))).id, withEmb.id);
  });
  it("votes when the rules are silent", () => {
    const c = withEmb.classify(rec("someone/helper", "Does things for you"), unit("agent"));
    assert.equal(c.category, "agent");
    assert.match(c.reason, /embedding/);
  });
  it("never hides a repository on its own", () => {
    assert.equal(withEmb.classify(rec("someone/helper", "Does things for you"), unit("curated-list")).category, null);
  });
  it("does not override clear rule evidence", () => {
    assert.equal(withEmb.classify(rec("someone/tsorm", "A type-safe ORM for TypeScript"), unit("frontend")).category, "data");
  });
  it("is ignored when the vector has other dimensions", () => {
    const r = rec("someone/helper", "Does things for you");
    assert.deepEqual(withEmb.classify(r, unit("agent", 7)), rules.classify(r));
  });
});
