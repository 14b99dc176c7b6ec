/**
 * store serve's HTTP plumbing: errors in Qdrant's wording and their statuses, the JSON body (with its size
 * limit) and the JSON response, path segments, headers, and the bounded labels of the request-duration
 * metric.
 */
import type { IncomingMessage, ServerResponse } from "node:http";
import { ErrorCode, ReposearchError } from "../../../common/errors.js";

/** An error answered with its own status; the message is Qdrant's `status.error`. */
export class HttpError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}
export const badRequest = (msg: string) => new HttpError(400, `Wrong input: ${msg}`);
export const notFound = (name: string) => new HttpError(404, `Not found: Collection \`${name}\` doesn't exist!`);

/** A JSON object (not null, not an array). */
export function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

/** The request body as a JSON object ({} when empty); 413 past maxBytes, 400 when it is not a JSON object. */
export async function readJson(req: IncomingMessage, maxBytes: number): Promise<Record<string, unknown>> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const c of req) {
    const buf = c as Buffer;
    size += buf.byteLength;
    if (size > maxBytes) throw new HttpError(413, `Payload too large: the body exceeds ${maxBytes} bytes`);
    chunks.push(buf);
  }
  if (size === 0) return {};
  let body: unknown;
  try {
    body = JSON.parse(Buffer.concat(chunks).toString("utf8"));
  } catch (err) {
    throw new HttpError(400, `Json deserialize error: ${(err as Error).message}`);
  }
  if (!isRecord(body)) throw new HttpError(400, "Json deserialize error: the body must be a JSON object");
  return body;
}

export function send(res: ServerResponse, status: number, body: unknown): void {
  const json = JSON.stringify(body);
  res.writeHead(status, { "content-type": "application/json", "content-length": Buffer.byteLength(json) });
  res.end(json);
}

/** The status and message of a failed request: HttpErrors as they are, the store's errors by code, the rest 500. */
export function toHttpError(err: unknown): { status: number; message: string } {
  if (err instanceof HttpError) return { status: err.status, message: err.message };
  if (err instanceof ReposearchError) {
    if (err.code === ErrorCode.ValidationError) return { status: 400, message: `Wrong input: ${err.message}` };
    if (err.code === ErrorCode.NotFound) return { status: 404, message: `Not found: ${err.message}` };
    if (err.code === ErrorCode.Unavailable) return { status: 503, message: `Service unavailable: ${err.message}` };
  }
  return { status: 500, message: `Service internal error: ${err instanceof Error ? err.message : String(err)}` };
}

/** The non-empty, URI-decoded segments of a path. */
export function pathSegments(pathname: string): string[] {
  return pathname
    .split("/")
    .filter((s) => s !== "")
    .map(decodeSegment);
}

function decodeSegment(s: string): string {
  try {
    return decodeURIComponent(s);
  } catch {
    throw badRequest(`malformed path segment ${JSON.stringify(s)}`);
  }
}

/** A header's first non-empty value, or null. */
export function headerValue(req: IncomingMessage, name: string): string | null {
  const v = req.headers[name];
  const s = Array.isArray(v) ? v[0] : v;
  return typeof s === "string" && s !== "" ? s : null;
}

/** Collection sub-paths of the emulated API, the only ones that become a route label. */
const ROUTE_SUFFIXES: ReadonlySet<string> = new Set(["exists", "index", "points", "points/delete", "points/scroll", "points/count", "points/query"]);
const METRIC_METHODS: ReadonlySet<string> = new Set(["GET", "HEAD", "POST", "PUT", "DELETE", "PATCH", "OPTIONS"]);

/** A bounded route label for metrics: collection names become placeholders, unknown paths "unmatched". */
export function routeLabel(segs: readonly string[], collection: string, metaCollection: string): string {
  if (segs.length === 0) return "/";
  if (segs[0] !== "collections") return "unmatched";
  if (segs.length === 1) return "/collections";
  const name = segs[1] === collection ? "{collection}" : segs[1] === metaCollection ? "{meta}" : "{other}";
  const rest = segs.slice(2).join("/");
  if (rest === "") return `/collections/${name}`;
  return ROUTE_SUFFIXES.has(rest) ? `/collections/${name}/${rest}` : "unmatched";
}

/** A bounded method label for metrics: the standard methods, anything else "other". */
export function metricMethod(method: string | undefined): string {
  return method !== undefined && METRIC_METHODS.has(method) ? method : "other";
}
