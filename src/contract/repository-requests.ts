/**
 * The request contract of the two repository operations beyond the spec (both additive):
 *   - similar: `POST /v1/codehost/similar`, gRPC `Similar`, MCP `find_similar_repositories`;
 *   - repository: `GET /v1/codehost/repos/{owner}/{repo}`, gRPC `GetRepository`, MCP `get_repository`.
 *
 * Same rules as search-request.ts: one source, published by the OpenAPI document (SimilarRequest; the
 * GET's path parameters are the two halves of `repo`), compiled by the core's validator, restated by
 * the proto's `(reposearch.v1.limits)` options and checked against them by proto-agreement.test.ts.
 * `limit`, `includeTree` and `filters` are the search's own, so a similar request filters exactly as a
 * search does.
 */
import { COMPONENTS_REF, inlineRefs, type JsonSchema } from "./json-schema.js";
import { LIMITS, OWNER_REPO_PATTERN, requestSchemas } from "./search-request.js";

/** `owner/repo` of an indexed project: its current name or a former one. */
const repoName = (description: string): JsonSchema => ({
  type: "string",
  maxLength: LIMITS.repoMaxLength,
  pattern: OWNER_REPO_PATTERN,
  description,
  examples: ["expressjs/express"],
});

const searchProps = requestSchemas.SearchRequest.properties ?? {};

const similarRequest: JsonSchema = {
  type: "object",
  title: "SimilarRequest",
  description:
    "Repositories like a given one. Only `repo` is required. Unknown top-level properties are rejected with 400 VALIDATION_ERROR (rule `additionalProperties`).",
  additionalProperties: false,
  required: ["repo"],
  properties: {
    repo: repoName(
      "The repository to find alternatives to, as `owner/repo` (at most 200 characters). A former name of a renamed or moved project finds the project. The repository itself (under every name) is never among the results.",
    ),
    limit: searchProps.limit!,
    includeTree: searchProps.includeTree!,
    filters: {
      $ref: `${COMPONENTS_REF}Filters`,
      default: { excludeArchived: true },
      description: 'The search\'s filter object, with the same rules and defaults (`{"excludeArchived": true}`), applied before ranking.',
    },
  },
};

/** The request schemas the OpenAPI document publishes for the repository operations. */
export const repositoryRequestSchemas: Readonly<Record<"SimilarRequest", JsonSchema>> = { SimilarRequest: similarRequest };

/** The similar request, self-contained (core validator, MCP tool input). */
export const similarRequestSchema: JsonSchema = inlineRefs({ $ref: `${COMPONENTS_REF}SimilarRequest` }, { ...requestSchemas, ...repositoryRequestSchemas });

/** The repository-card request (core validator, MCP tool input); REST carries `repo` as the path `/repos/{owner}/{repo}`. */
export const repositoryRequestSchema: JsonSchema = {
  type: "object",
  title: "GetRepositoryRequest",
  description: "One repository's card. A former name answers the card of the project under its current name.",
  additionalProperties: false,
  required: ["repo"],
  properties: { repo: repoName("The repository, as `owner/repo` (at most 200 characters).") },
};

/** One half of `owner/repo` in a REST path: non-empty, no slash, no whitespace. */
export const REPO_SEGMENT_PATTERN = "^[^/\\s]+$";
