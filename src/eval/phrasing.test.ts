import { describe, expect, it } from "vitest";
import { asksForMany, headPhrase } from "../core/query.js";
import { pluralVariant } from "./phrasing.js";

describe("pluralVariant", () => {
  it("puts the head noun in the plural and keeps the rest as written", () => {
    expect(pluralVariant("web framework for rust")).toBe("web frameworks for rust");
    expect(pluralVariant("Go library for building CLIs with subcommands")).toBe("Go libraries for building CLIs with subcommands");
    expect(pluralVariant("password manager")).toBe("password managers");
    expect(pluralVariant("http proxy")).toBe("http proxies");
    expect(pluralVariant("python ORM")).toBe("python ORMs");
    expect(pluralVariant("terminal multiplexer")).toBe("terminal multiplexers");
  });

  it("gives a query the ranker reads as asking for many", () => {
    for (const q of ["relational database", "static site generator for go", "self-hosted note app (markdown)"]) {
      const v = pluralVariant(q);
      expect(v).not.toBeNull();
      expect(asksForMany(headPhrase(v!))).toBe(true);
      expect(asksForMany(headPhrase(q))).toBe(false);
    }
    expect(pluralVariant("self-hosted note app (markdown)")).toBe("self-hosted note apps (markdown)");
    // A plural the ranker would not read as one ("wikis" ends like "analysis") is no variant.
    expect(pluralVariant("self-hosted wiki")).toBeNull();
  });

  it("leaves alone a query that asks for many already, and a head that is no count noun", () => {
    expect(pluralVariant("Python libraries for image processing")).toBeNull();
    expect(pluralVariant("container orchestration")).toBeNull();
    expect(pluralVariant("password management")).toBeNull();
    expect(pluralVariant("infrastructure as code software")).toBeNull();
    expect(pluralVariant("distributed tracing")).toBeNull();
    expect(pluralVariant("much faster")).toBeNull();
    expect(pluralVariant("")).toBeNull();
  });
});
