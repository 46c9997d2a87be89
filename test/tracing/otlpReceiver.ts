import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";

/** one span as OTLP/HTTP's JSON encoding carries it (what @opentelemetry/exporter-trace-otlp-http sends) */
export interface ReceivedSpan {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  traceState?: string;
  name: string;
  kind: number;
  attributes: Record<string, string | number | boolean>;
  status: { code?: number };
  resource: Record<string, string | number | boolean>;
}

interface OtlpValue {
  stringValue?: string;
  intValue?: string | number;
  doubleValue?: number;
  boolValue?: boolean;
}
type OtlpAttributes = { key: string; value: OtlpValue }[] | undefined;

const flat = (attrs: OtlpAttributes): Record<string, string | number | boolean> =>
  Object.fromEntries(
    (attrs ?? []).map(({ key, value }) => [key, value.stringValue ?? (value.intValue !== undefined ? Number(value.intValue) : undefined) ?? value.doubleValue ?? value.boolValue ?? ""]),
  );

/**
 * A local OTLP/HTTP collector on 127.0.0.1: it keeps every span posted to /v1/traces (JSON encoding) with the
 * headers of each export, answers 200 (or, with `hang`, never answers: a collector that accepts and stalls).
 */
export async function startOtlpReceiver(opts: { hang?: boolean } = {}): Promise<{
  url: string;
  spans: ReceivedSpan[];
  exports: { path: string; headers: Record<string, string | string[] | undefined> }[];
  close(): Promise<void>;
}> {
  const spans: ReceivedSpan[] = [];
  const exports: { path: string; headers: Record<string, string | string[] | undefined> }[] = [];
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      exports.push({ path: req.url ?? "", headers: req.headers });
      if (opts.hang) return;
      const body = JSON.parse(Buffer.concat(chunks).toString("utf8")) as {
        resourceSpans: { resource?: { attributes?: OtlpAttributes }; scopeSpans: { spans: (Omit<ReceivedSpan, "attributes" | "resource"> & { attributes?: OtlpAttributes })[] }[] }[];
      };
      for (const rs of body.resourceSpans) {
        for (const ss of rs.scopeSpans) {
          for (const s of ss.spans) spans.push({ ...s, attributes: flat(s.attributes), resource: flat(rs.resource?.attributes) });
        }
      }
      res.writeHead(200, { "content-type": "application/json" }).end("{}");
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    spans,
    exports,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
