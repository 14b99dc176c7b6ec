import assert from "node:assert/strict";
import { describe, it } from "vitest";
import { asksForMany, headPhrase, languageSaid, languageServes, understandQuery } from "./query.js";

describe("asksForMany: a kind of thing asked for in the plural", () => {
  it("reads the head noun, the last word before what qualifies it", () => {
    for (const q of [
      "Python libraries for image processing",
      "Terminal web browsers",
      "Interactive Python interpreters (REPL)",
      ".NET compilers, transpilers and languages",
      "build ui components in isolation",
    ]) {
      assert.equal(asksForMany(headPhrase(q)), true, q);
    }
    for (const q of ["web server", "password manager", "MCP server for cloud storage", "web framework for rust", "library for parsing dates with utilities"]) {
      assert.equal(asksForMany(headPhrase(q)), false, q);
    }
  });

  it("words that end in s without being plurals ask for one thing", () => {
    for (const q of ["kubernetes", "managed postgres", "gnu emacs", "css", "orchestrator for kubernetes", "physics"])
      assert.equal(asksForMany(headPhrase(q)), false, q);
    for (const q of ["process", "prometheus", "status", "exodus"]) assert.equal(asksForMany(headPhrase(q)), false, q);
  });
});

describe("headPhrase: the words that say what is asked for", () => {
  it("stops at the first word that qualifies them; the last is the head noun", () => {
    assert.deepEqual(headPhrase("web framework for rust"), ["web", "framework"]);
    assert.deepEqual(headPhrase("Java framework for building microservices"), ["java", "framework"]);
    assert.deepEqual(headPhrase("Python libraries (fast) with async support"), ["python", "libraries"]);
    assert.deepEqual(headPhrase("relational database"), ["relational", "database"]);
  });

  it("a query that opens with a qualifying word keeps it: there is nothing before it to qualify", () => {
    assert.deepEqual(headPhrase("for loops in bash"), ["for", "loops"]);
    assert.deepEqual(headPhrase(""), []);
  });
});

describe("languageServes: a repository's language serves the language a query names", () => {
  it("the same language, and TypeScript or JavaScript for the JavaScript family's names", () => {
    assert.equal(languageServes("python", "python"), true);
    assert.equal(languageServes("javascript", "typescript"), true);
    assert.equal(languageServes("vue", "typescript"), true);
    assert.equal(languageServes("svelte", "javascript"), true);
    assert.equal(languageServes("typescript", "javascript"), false);
    assert.equal(languageServes("python", "rust"), false);
    assert.equal(languageServes("c", "c++"), false);
  });
});

describe("understandQuery: the language a query asks for", () => {
  it("a query for a programming language names others only as what it runs on, compiles to or looks like", () => {
    assert.equal(understandQuery("jvm language by jetbrains").language, null);
    assert.equal(understandQuery("functional language that compiles to javascript").language, null);
    assert.equal(understandQuery("statically typed language with python-like syntax").language, null);
    // The language it names as itself, and every other kind of thing, keep the language.
    assert.equal(understandQuery("zig programming language").language, "zig");
    assert.equal(understandQuery("language server for rust").language, "rust");
    assert.equal(understandQuery("jvm profiler").language, "java");
    assert.equal(understandQuery("job queue for node backed by redis").language, "javascript");
    assert.equal(understandQuery("node version manager").language, "javascript");
    assert.equal(understandQuery("Node.js tutorials").language, "javascript");
    assert.equal(understandQuery("node-based stable diffusion gui").language, null);
    assert.equal(understandQuery("bitcoin full node").language, null);
    assert.equal(understandQuery("kubernetes node autoscaler").language, null);
  });
});

describe("understandQuery: the kind of repository a query asks for", () => {
  const educational = (q: string) => understandQuery(q).categories.includes("educational");

  it("learning names learning material, except as a kind of machine learning", () => {
    assert.equal(educational("deep learning framework"), false);
    assert.equal(educational("Python machine learning libraries"), false);
    assert.equal(educational("python library for reinforcement learning algorithms"), false);
    assert.equal(educational("self-supervised learning toolkit"), false);
    assert.equal(educational("Tools for learning the command line"), true);
    assert.equal(educational("machine learning course"), true);
    assert.equal(educational("learn rust by exercises"), true);
  });

  it("a learning word a word or two before a software noun is what the software handles", () => {
    assert.equal(educational("learning management system"), false);
    assert.equal(educational("online course platform"), false);
    assert.equal(educational("book reader"), false);
    assert.equal(educational("tutorial generator for docs"), false);
    assert.equal(educational("Node.js tutorials"), true);
    assert.equal(educational("book about distributed systems"), true);
    assert.equal(educational("course on building a web server"), true);
  });

  it("a cue counts where it names the thing asked for, not where it qualifies another noun", () => {
    const kinds = (q: string) => understandQuery(q).categories;
    assert.deepEqual(kinds("open source flashcards app"), ["application"]);
    assert.deepEqual(kinds("youtube app for android without ads"), ["application"]);
    assert.deepEqual(kinds("web application security scanner"), []);
    assert.deepEqual(kinds("mobile app automation testing"), []);
    assert.deepEqual(kinds("typescript web application framework"), ["framework"]);
    assert.deepEqual(kinds("template-based vulnerability scanner"), []);
    assert.deepEqual(kinds("project template for flask"), ["starter"]);
    assert.deepEqual(kinds("metrics collection agent"), []);
    assert.deepEqual(kinds("coding agent for the terminal"), ["agent"]);
  });

  it("a package manager is a tool, a desktop or torrent client an application, an ebook library no code library", () => {
    const kinds = (q: string) => understandQuery(q).categories;
    assert.deepEqual(kinds("package manager for macos"), ["tool"]);
    assert.deepEqual(kinds("python package for parsing dates"), ["library"]);
    assert.deepEqual(kinds("bittorrent client"), ["application"]);
    assert.deepEqual(kinds("git gui client"), ["application"]);
    assert.deepEqual(kinds("redis client for node"), ["library"]);
    assert.deepEqual(kinds("ebook library management"), ["application"]);
    assert.deepEqual(kinds("javascript charting library"), ["library"]);
  });
});

describe("languageSaid: a repository's own words say the language a query names", () => {
  it("finds the language's aliases in names, descriptions and hyphenated topics", () => {
    assert.equal(languageSaid("python", "ruff An extremely fast Python linter, written in Rust."), true);
    assert.equal(languageSaid("javascript", "nvm Node Version Manager - POSIX-compliant bash script"), true);
    assert.equal(languageSaid("javascript", "fnm fast-node-manager nodejs rust"), true);
    assert.equal(languageSaid("go", "x A Go library for retries"), true);
    assert.equal(languageSaid("go", "esbuild An extremely fast bundler for the web"), false);
    assert.equal(languageSaid("java", "a javascript toolkit"), false);
    assert.equal(languageSaid("c", "a C library for JSON"), true);
    assert.equal(languageSaid("c", "a library for JSON"), false);
  });
});
