import assert from "node:assert/strict";
import { describe, it } from "vitest";
import { searchText } from "./framing.js";

describe("searchText: the query without the words that frame the request", () => {
  it("removes requests, praise and popularity, and 'repository for' at the start", () => {
    const cases: ReadonlyArray<readonly [string, string]> = [
      ["what is the best container orchestration?", "container orchestration"],
      ["I'm looking for a terminal multiplexer", "a terminal multiplexer"],
      ["looking for a static site generator", "a static site generator"],
      ["can you recommend a good static site generator", "static site generator"],
      ["Recommend me a Go web framework", "a Go web framework"],
      ["most popular open source notion alternative", "open source notion alternative"],
      ["GitHub repository for command line json processor", "command line json processor"],
      ["top 10 react component libraries", "react component libraries"],
      ["is there a tool to find leaked secrets", "a tool to find leaked secrets"],
      ["java framework on github?", "java framework"],
      ["popular Python web frameworks", "Python web frameworks"],
    ];
    for (const [query, want] of cases) assert.equal(searchText(query), want, query);
  });

  it("keeps words that describe the thing asked for, and any framing past the start", () => {
    for (const query of [
      "open source fork of redis",
      "open-source firebase alternative",
      "open source game engine",
      "free and open-source video editor",
      "continuous fuzzing for open source software",
      "best practices for node",
      "recommendation engine",
      "recommender systems in python",
      "show hidden files",
      "github on the command line",
      "run github actions locally",
      "Python libraries for working with human languages",
      "awesome python",
      "great expectations data validation",
      "good first issue finder",
      "top",
    ])
      assert.equal(searchText(query), query, query);
  });

  it("never leaves nothing: a query that is only framing stays as it is", () => {
    for (const query of ["best", "popular", "most popular", "github repository"]) assert.equal(searchText(query), query, query);
    assert.equal(searchText("what is the best?"), "best");
  });
});
