import http from "node:http";
import { isDeepStrictEqual } from "node:util";
import { encodeVendorBlob } from "../../src/attestation/sim/deviceSim.ts";
import type { VendorFixture } from "../../bench/lib/vendorFixture.ts";
import { percentile } from "../../bench/lib/stats.ts";

/**
 * The campaign's client: Part A's nonce-then-blob cycle over keep-alive connections on the loopback, every
 * answer handed to an observer, and a ledger of what the service acknowledged. The ledger is the client's side of
 * the durability promise: a verdict answered 200 must be readable afterwards, identical, and its nonce must never
 * be accepted again.
 */

export const KEY_HEADER = "x-vendor-attest-api-key";

export interface Answer {
  status: number;
  headers: http.IncomingHttpHeaders;
  body: string;
}

/** One request's outcome: an HTTP answer, or `error` when none came (refused, reset, timed out). */
export interface Outcome {
  op: "nonce" | "blob" | "read" | "replay";
  base: string;
  start: number;
  end: number;
  status: number;
  /** the catalog code of an error body */
  code?: string;
  retryAfter?: string;
  error?: string;
}

export class Client {
  private readonly agents = new Map<string, http.Agent>();
  constructor(readonly apiKey: string) {}

  private agent(base: string): http.Agent {
    let a = this.agents.get(base);
    if (!a) this.agents.set(base, (a = new http.Agent({ keepAlive: true, maxSockets: 64 })));
    return a;
  }

  request(base: string, method: string, path: string, body?: Buffer, timeoutMs = 15_000): Promise<Answer> {
    return new Promise((resolve, reject) => {
      const headers: Record<string, string> = { [KEY_HEADER]: this.apiKey };
      if (body) headers["content-type"] = "application/octet-stream";
      const req = http.request(`${base}${path}`, { method, headers, agent: this.agent(base) }, (res) => {
        const chunks: Buffer[] = [];
        res.on("data", (c: Buffer) => chunks.push(c));
        res.on("end", () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks).toString("utf8") }));
        res.on("error", reject);
      });
      req.on("error", reject);
      req.setTimeout(timeoutMs, () => req.destroy(new Error(`no answer in ${timeoutMs} ms`)));
      req.end(body);
    });
  }

  /** The request as an Outcome (never throws) plus the answer when there was one. */
  async observe(op: Outcome["op"], base: string, method: string, path: string, body?: Buffer): Promise<{ o: Outcome; a?: Answer }> {
    const start = performance.now();
    try {
      const a = await this.request(base, method, path, body);
      const o: Outcome = { op, base, start, end: performance.now(), status: a.status };
      if (a.status !== 200) {
        try {
          o.code = JSON.parse(a.body)?.error?.code;
        } catch {
          // not a JSON error body: the status says enough
        }
      }
      if (a.headers["retry-after"] !== undefined) o.retryAfter = String(a.headers["retry-after"]);
      return { o, a };
    } catch (e) {
      return { o: { op, base, start, end: performance.now(), status: 0, error: (e as NodeJS.ErrnoException).code ?? (e as Error).message } };
    }
  }

  close(): void {
    for (const a of this.agents.values()) a.destroy();
    this.agents.clear();
  }
}

interface Ack {
  base: string;
  location: string;
  record: unknown;
  blob: Buffer;
}

export interface LedgerCheck {
  acknowledged: number;
  /** acknowledged verdicts read back 200 and deep-equal to the acknowledgement */
  readBackIdentical: number;
  missing: number;
  different: number;
  /** the same nonce answered 200 twice during the load (concurrent duplicate posts, other instance) */
  acceptedTwice: number;
  /** acknowledged nonces posted again afterwards: refused 400 4000004, or (a violation) anything else */
  replayRefused: number;
  replayAccepted: number;
  replayOther: number;
  examples: string[];
  ok: boolean;
}

export class Ledger {
  readonly acks = new Map<string, Ack>();
  private twice: string[] = [];

  accept(nonce: string, base: string, a: Answer, blob: Buffer): void {
    if (this.acks.has(nonce)) {
      this.twice.push(nonce);
      return;
    }
    this.acks.set(nonce, { base, location: String(a.headers.location), record: JSON.parse(a.body), blob });
  }

  /** Reads every acknowledged verdict back and replays every acknowledged nonce, `bases` taking turns. */
  async verify(client: Client, bases: readonly string[], concurrency = 8): Promise<LedgerCheck> {
    const c: LedgerCheck = {
      acknowledged: this.acks.size,
      readBackIdentical: 0,
      missing: 0,
      different: 0,
      acceptedTwice: this.twice.length,
      replayRefused: 0,
      replayAccepted: 0,
      replayOther: 0,
      examples: this.twice.slice(0, 3).map((n) => `nonce ${n} accepted twice during the load`),
      ok: false,
    };
    const note = (s: string) => c.examples.length < 10 && c.examples.push(s);
    const entries = [...this.acks.entries()];
    let next = 0;
    const worker = async (w: number) => {
      for (let i = next++; i < entries.length; i = next++) {
        const [nonce, ack] = entries[i]!;
        const base = bases[(i + w) % bases.length]!;
        const read = await client.observe("read", base, "GET", ack.location);
        if (read.a?.status !== 200) {
          c.missing++;
          note(`${ack.location}: read back ${read.o.status || read.o.error}`);
        } else if (!isDeepStrictEqual(JSON.parse(read.a.body), ack.record)) {
          c.different++;
          note(`${ack.location}: read back differs from the acknowledgement`);
        } else c.readBackIdentical++;
        const replay = await client.observe("replay", base, "POST", `/v2/blobs?nonce=${encodeURIComponent(nonce)}`, ack.blob);
        if (replay.o.status === 400 && replay.o.code === "4000004") c.replayRefused++;
        else if (replay.o.status === 200) {
          c.replayAccepted++;
          note(`nonce ${nonce} accepted again after the fault`);
        } else {
          c.replayOther++;
          note(`nonce ${nonce} replayed: ${replay.o.status || replay.o.error} ${replay.o.code ?? ""}`);
        }
      }
    };
    await Promise.all(Array.from({ length: concurrency }, (_, w) => worker(w)));
    c.ok = c.missing === 0 && c.different === 0 && c.acceptedTwice === 0 && c.replayAccepted === 0 && c.replayOther === 0;
    return c;
  }
}

export interface LoadOptions {
  /** the instances to use, asked before each cycle (a killed one may be taken out) */
  bases: () => readonly string[];
  /** closed loop: this many cycles in flight, each starting when the last ended */
  concurrency: number;
  /** open loop instead: cycles started per second, whatever the answers' speed (concurrency caps those in flight) */
  rate?: number;
  /** every Nth cycle posts its blob twice at once, to two instances when there are two */
  duplicateEvery?: number;
  ledger?: Ledger;
  observe: (o: Outcome) => void;
}

/**
 * Runs cycles until `stop()` is called: POST /v2/nonces on one instance, a freshly signed vendor blob for it to
 * POST /v2/blobs on the next. Resolves when the cycles in flight have ended, with how many cycles an open loop
 * could not start because `concurrency` were still in flight (the generator fell behind).
 */
export function startLoad(client: Client, fx: VendorFixture, o: LoadOptions): { stop: () => Promise<{ cycles: number; shed: number }> } {
  let stopping = false;
  let cycles = 0;
  let shed = 0;
  const cycle = async (n: number) => {
    const bases = o.bases();
    // nothing to send to (the only instance killed): wait on a timer, never spin on promises that starve them
    if (bases.length === 0) return void (await sleep(50));
    const nb = bases[n % bases.length]!;
    const issued = await client.observe("nonce", nb, "POST", "/v2/nonces");
    o.observe(issued.o);
    if (issued.o.status !== 200) return;
    const nonce = JSON.parse(issued.a!.body).nonce as string;
    const blob = Buffer.from(encodeVendorBlob({ nonce, leaf: fx.devices[n % fx.devices.length]!, ca: fx.ca }));
    const first = bases[(n + 1) % bases.length]!;
    const targets = o.duplicateEvery && n % o.duplicateEvery === 0 ? [first, bases[n % bases.length]!] : [first];
    await Promise.all(
      targets.map(async (b) => {
        const r = await client.observe("blob", b, "POST", `/v2/blobs?nonce=${encodeURIComponent(nonce)}`, blob);
        o.observe(r.o);
        if (r.o.status === 200) o.ledger?.accept(nonce, b, r.a!, blob);
      }),
    );
  };
  const done: Promise<void>[] = [];
  if (o.rate) {
    const t0 = performance.now();
    let started = 0;
    const inflight = new Set<Promise<void>>();
    const tick = setInterval(() => {
      const due = Math.floor(((performance.now() - t0) / 1000) * o.rate!);
      for (; started < due; started++) {
        if (inflight.size >= o.concurrency) {
          shed++;
          continue;
        }
        const p = cycle(cycles++).finally(() => inflight.delete(p));
        inflight.add(p);
      }
    }, 5);
    done.push(
      (async () => {
        while (!stopping) await new Promise((r) => setTimeout(r, 50));
        clearInterval(tick);
        await Promise.all(inflight);
      })(),
    );
  } else {
    for (let w = 0; w < o.concurrency; w++) {
      done.push(
        (async () => {
          while (!stopping) {
            await cycle(cycles++);
          }
        })(),
      );
    }
  }
  return {
    stop: async () => {
      stopping = true;
      await Promise.all(done);
      return { cycles, shed };
    },
  };
}

/** Latency summary in ms of a list of outcomes. */
export function latency(outcomes: readonly Outcome[]): Latency {
  return latencyOf(outcomes.map((o) => o.end - o.start));
}

export interface Latency {
  n: number;
  p50: number;
  p99: number;
  max: number;
}

/** The same from durations in ms. */
export function latencyOf(durations: number[]): Latency {
  const ms = durations.sort((a, b) => a - b);
  const r = (x: number) => Math.round(x * 100) / 100;
  return { n: ms.length, p50: r(percentile(ms, 50)), p99: r(percentile(ms, 99)), max: r(ms.at(-1) ?? 0) };
}

/** Counts outcomes by "op status[/code]" (or "op error:CODE"), for the JSON. */
export function tally(outcomes: Iterable<Outcome>): Record<string, number> {
  const t: Record<string, number> = {};
  for (const o of outcomes) {
    const k = o.error ? `${o.op} error:${o.error}` : `${o.op} ${o.status}${o.code ? `/${o.code}` : ""}`;
    t[k] = (t[k] ?? 0) + 1;
  }
  return t;
}

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
