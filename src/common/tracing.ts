/**
 * OpenTelemetry tracing. Off by default: spans are only recorded once initTracing() registered a
 * provider, which serve() does when OTEL_EXPORTER_OTLP_ENDPOINT is set (OTLP over HTTP, batched) and
 * tests do with an in-memory exporter. Until then every tracer call is the API's no-op, so the
 * instrumented code costs next to nothing.
 *
 * Propagation is W3C trace context (`traceparent`/`tracestate`), done by hand at the two hops:
 * HTTP headers into the gateway's server span, and gRPC metadata from the gateway's client span to
 * the core's server span (src/gateway/app.ts, src/core/grpc/server.ts). Stage spans are children of
 * the core span (stageSpan below). See docs/observability.md.
 */
import {
  ROOT_CONTEXT,
  SpanKind,
  SpanStatusCode,
  context,
  propagation,
  trace,
  type Attributes,
  type Context,
  type Span,
  type SpanOptions,
  type Tracer,
} from "@opentelemetry/api";
import { W3CTraceContextPropagator } from "@opentelemetry/core";
import { OTLPTraceExporter } from "@opentelemetry/exporter-trace-otlp-http";
import { resourceFromAttributes } from "@opentelemetry/resources";
import { BatchSpanProcessor, NodeTracerProvider, SimpleSpanProcessor, type SpanExporter } from "@opentelemetry/sdk-trace-node";
import { ATTR_SERVICE_NAME, ATTR_SERVICE_VERSION } from "@opentelemetry/semantic-conventions";

export { ROOT_CONTEXT, SpanKind, SpanStatusCode, context, trace };
export type { Context, Span };

/** Instrumentation scope of every reposearch span. */
export const TRACER_NAME = "reposearch";

export interface TracingOptions {
  /** service.name of the spans (OTEL_SERVICE_NAME). */
  readonly serviceName: string;
  readonly serviceVersion?: string | undefined;
  /** OTLP/HTTP base URL (OTEL_EXPORTER_OTLP_ENDPOINT); spans go to `<endpoint>/v1/traces`. */
  readonly otlpEndpoint?: string | null | undefined;
  /**
   * An exporter to use instead of OTLP (tests: InMemorySpanExporter). Spans are handed to it as
   * each ends (SimpleSpanProcessor), so they are there as soon as the request is answered.
   */
  readonly exporter?: SpanExporter | undefined;
}

export interface Tracing {
  /** Whether spans are recorded and exported (false: nothing was configured, the API stays no-op). */
  readonly enabled: boolean;
  /** Exports every span ended so far. */
  forceFlush(): Promise<void>;
  /** Flushes, stops the exporter and unregisters the provider. Idempotent. */
  shutdown(): Promise<void>;
}

const w3c = new W3CTraceContextPropagator();
const DISABLED: Tracing = Object.freeze({ enabled: false, forceFlush: async () => {}, shutdown: async () => {} });
let active: { provider: NodeTracerProvider; handle: Tracing } | null = null;

/** The OTLP/HTTP traces URL for a base endpoint, as the OTel spec derives it. */
export function otlpTracesUrl(endpoint: string): string {
  return `${endpoint.replace(/\/+$/, "")}/v1/traces`;
}

/**
 * Registers a NodeTracerProvider globally (AsyncLocalStorage context, W3C propagator) exporting to
 * the given exporter or to OTLP/HTTP; without either it changes nothing and returns a disabled
 * handle. A second call replaces the first provider (after flushing it).
 */
export function initTracing(opts: TracingOptions): Tracing {
  const endpoint = opts.otlpEndpoint?.trim() || null;
  if (!opts.exporter && !endpoint) return DISABLED;
  if (active) void active.handle.shutdown();
  const processor = opts.exporter ? new SimpleSpanProcessor(opts.exporter) : new BatchSpanProcessor(new OTLPTraceExporter({ url: otlpTracesUrl(endpoint!) }));
  const provider = new NodeTracerProvider({
    resource: resourceFromAttributes({
      [ATTR_SERVICE_NAME]: opts.serviceName,
      ...(opts.serviceVersion ? { [ATTR_SERVICE_VERSION]: opts.serviceVersion } : {}),
    }),
    spanProcessors: [processor],
  });
  provider.register({ propagator: w3c });
  let stopped: Promise<void> | null = null;
  const handle: Tracing = {
    enabled: true,
    forceFlush: () => provider.forceFlush(),
    shutdown() {
      stopped ??= (async () => {
        if (active?.provider === provider) {
          active = null;
          trace.disable();
          context.disable();
          propagation.disable();
        }
        await provider.shutdown().catch(() => {});
      })();
      return stopped;
    },
  };
  active = { provider, handle };
  return handle;
}

/** The reposearch tracer (the API's proxy: no-op until a provider is registered). */
export function tracer(): Tracer {
  return trace.getTracer(TRACER_NAME);
}

type Carrier = Readonly<Record<string, string | readonly string[] | undefined>>;

/**
 * The trace context carried by W3C headers (HTTP headers or gRPC metadata values), as a parent. The
 * base is the root context: a server's span descends from its caller or from nothing.
 */
export function extractTraceContext(carrier: Carrier, base: Context = ROOT_CONTEXT): Context {
  return w3c.extract(base, carrier, {
    get: (c, key) => {
      const v = c[key];
      return typeof v === "string" ? v : Array.isArray(v) ? (v as string[]) : undefined;
    },
    keys: (c) => Object.keys(c),
  });
}

/** `traceparent` (and `tracestate`) for the span in `ctx`; empty when there is no valid span. */
export function traceHeaders(ctx: Context): Record<string, string> {
  const out: Record<string, string> = {};
  w3c.inject(ctx, out, { set: (c, k, v) => void (c[k] = v) });
  return out;
}

/** Starts a span under `parent` and returns it with the context that has it as the active span. */
export function startSpan(name: string, options: SpanOptions, parent: Context): { span: Span; ctx: Context } {
  const span = tracer().startSpan(name, options, parent);
  return { span, ctx: trace.setSpan(parent, span) };
}

/** The trace id of a recording span, for log correlation; undefined otherwise. */
export function traceIdOf(span: Span | undefined): string | undefined {
  if (!span || !span.isRecording()) return undefined;
  return span.spanContext().traceId;
}

/**
 * A finished span recorded after the fact: `seconds` long, ending now, child of the span in
 * `parent`. Used for the engine's stages, which report their duration when they end.
 */
export function stageSpan(parent: Context, name: string, seconds: number, attributes: Attributes = {}): void {
  // Times on the monotonic clock (performance.now()), which the SDK aligns with the wall clock the way it
  // aligns every other span. An epoch time built from performance.timeOrigin is taken as is, and drifts
  // from Date.now() as the process runs: stage spans then fell milliseconds outside their parent.
  const end = performance.now();
  const span = tracer().startSpan(name, { kind: SpanKind.INTERNAL, startTime: Math.max(0, end - seconds * 1000), attributes }, parent);
  span.end(end);
}

/** Marks a span failed with a short message (never a key or a body). */
export function failSpan(span: Span, message: string): void {
  span.setStatus({ code: SpanStatusCode.ERROR, message });
}
