import autocannon, { type RequestSpec, type Result } from "autocannon";
import { percentile } from "./stats.ts";

/** One request of a load run: path and body; headers are shared by the run. */
export interface LoadRequest {
  path: string;
  body?: Buffer;
}

export interface LoadOptions {
  /** e.g. https://127.0.0.1:8443 */
  origin: string;
  method: "POST" | "GET";
  headers: Record<string, string>;
  /**
   * The requests, handed out in order across all connections. `cycle` repeats them; otherwise the run stops
   * when they are used up (a pool of single-use nonces must never be sent twice).
   */
  requests: readonly LoadRequest[];
  cycle: boolean;
  durationSec: number;
  connections: number;
  pipelining: number;
  /** called with each 2xx response body (collecting issued nonces) */
  onBody?: (body: string) => void;
}

export interface LoadResult {
  /** seconds the load actually ran (shorter than asked when a pool ran out) */
  durationSec: number;
  requests2xx: number;
  non2xx: number;
  errors: number;
  timeouts: number;
  /** 2xx responses per second */
  rps: number;
  /** from the bench's own per-response timings (sub-millisecond), 2xx only */
  latencyMs: { p50: number; p90: number; p99: number; max: number; mean: number };
  /** status code → count, as autocannon saw them */
  statusCodes: Record<string, number>;
  /** the request pool ran out before the duration elapsed */
  stoppedEarly: boolean;
  connections: number;
  pipelining: number;
}

/**
 * Drives one autocannon run over HTTPS keep-alive. Each connection asks `setupRequest` for its next request, and
 * a counter shared by all connections walks the pool, so every pooled request goes out at most once per cycle.
 */
export function runLoad(o: LoadOptions): Promise<LoadResult> {
  if (o.requests.length === 0) throw new Error("runLoad: empty request pool");
  let next = 0;
  let exhausted = false;
  let instance: ReturnType<typeof autocannon> | undefined;
  const latencies: number[] = [];

  const spec: RequestSpec = {
    method: o.method,
    setupRequest: (req) => {
      if (next >= o.requests.length) {
        if (o.cycle) next = 0;
        else {
          // Out of single-use requests: stop the run; re-send the last one meanwhile (it is never counted as 2xx
          // for a nonce pool, and the run ends within a tick).
          if (!exhausted) {
            exhausted = true;
            setImmediate(() => instance?.stop());
          }
          next = o.requests.length - 1;
        }
      }
      const r = o.requests[next++]!;
      return { ...req, path: r.path, ...(r.body ? { body: r.body } : {}) };
    },
    ...(o.onBody
      ? {
          onResponse: (status: number, body: string) => {
            if (status >= 200 && status < 300) o.onBody!(body);
          },
        }
      : {}),
  };

  return new Promise((resolve, reject) => {
    instance = autocannon(
      {
        url: o.origin,
        connections: o.connections,
        pipelining: o.pipelining,
        duration: o.durationSec,
        timeout: 10,
        headers: o.headers,
        requests: [spec],
      },
      (err, r: Result) => {
        if (err) return reject(err);
        latencies.sort((a, b) => a - b);
        const statusCodes: Record<string, number> = {};
        for (const [code, v] of Object.entries(r.statusCodeStats ?? {})) statusCodes[code] = v.count;
        const seconds = r.duration > 0 ? r.duration : o.durationSec;
        const mean = latencies.length ? latencies.reduce((a, b) => a + b, 0) / latencies.length : 0;
        resolve({
          durationSec: round(seconds, 3),
          requests2xx: r["2xx"],
          non2xx: r.non2xx,
          errors: r.errors,
          timeouts: r.timeouts,
          rps: round(r["2xx"] / seconds, 1),
          latencyMs: {
            p50: round(percentile(latencies, 50), 3),
            p90: round(percentile(latencies, 90), 3),
            p99: round(percentile(latencies, 99), 3),
            max: round(latencies[latencies.length - 1] ?? 0, 3),
            mean: round(mean, 3),
          },
          statusCodes,
          stoppedEarly: exhausted,
          connections: o.connections,
          pipelining: o.pipelining,
        });
      },
    );
    // autocannon reports whole-millisecond latencies; keep our own sub-millisecond ones for 2xx answers.
    instance.on("response", (_client: unknown, status: number, _bytes: number, ms: number) => {
      if (status >= 200 && status < 300) latencies.push(ms);
    });
  });
}

export function round(x: number, digits: number): number {
  const f = 10 ** digits;
  return Math.round(x * f) / f;
}
