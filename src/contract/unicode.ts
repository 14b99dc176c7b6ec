/**
 * Strings a request carries must be valid Unicode (the gateway checks JSON bodies, the core checks what
 * gRPC and Connect callers send).
 *
 * JSON can spell an unpaired UTF-16 surrogate (`"x\ud800y"`), and JSON.parse keeps it. No UTF-8
 * encoder can carry one: the protobuf encoding of the core call replaced it with U+FFFD, so the query
 * came back changed in `query` and `appliedFilters`, and could then exceed the 500 code points the
 * schema had just allowed. A body with one is a VALIDATION_ERROR naming each field (a JSON pointer,
 * like every other detail); the value is never echoed. A raw body that is not UTF-8 at all is refused
 * the same way as a whole (decoding would silently turn its bytes into U+FFFD).
 */
import type { ErrorDetail } from "../common/errors.js";

// With the `u` flag a well-formed pair is one code point, so only unpaired surrogates match.
const UNPAIRED_SURROGATE = /\p{Cs}/u;

export const UNPAIRED_SURROGATE_MESSAGE = "must be valid Unicode: it contains an unpaired UTF-16 surrogate (\\ud800-\\udfff)";

/** RFC 6901 escaping of one reference token. */
const pointerToken = (s: string): string => s.replace(/~/g, "~0").replace(/\//g, "~1");

/**
 * One detail per string value of `body` (at any depth) that holds an unpaired surrogate, with its
 * JSON pointer. Property names are not checked here: none of the schema's names has one, so such a
 * property is already reported as unknown.
 */
export function unpairedSurrogateDetails(body: unknown): ErrorDetail[] {
  const out: ErrorDetail[] = [];
  // Iterative: a 16 KiB body can nest thousands of levels deep.
  const stack: { value: unknown; path: string }[] = [{ value: body, path: "" }];
  while (stack.length > 0) {
    const { value, path } = stack.pop()!;
    if (typeof value === "string") {
      if (UNPAIRED_SURROGATE.test(value)) out.push({ path, rule: "unicode", message: UNPAIRED_SURROGATE_MESSAGE });
    } else if (Array.isArray(value)) {
      for (let i = value.length - 1; i >= 0; i--) stack.push({ value: value[i], path: `${path}/${i}` });
    } else if (value !== null && typeof value === "object") {
      const entries = Object.entries(value);
      for (let i = entries.length - 1; i >= 0; i--) stack.push({ value: entries[i]![1], path: `${path}/${pointerToken(entries[i]![0])}` });
    }
  }
  return out;
}
