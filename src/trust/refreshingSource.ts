import { createHash } from "node:crypto";
import { mkdir, readFile, rename, stat, writeFile } from "node:fs/promises";
import * as path from "node:path";
import { fileURLToPath } from "node:url";
import { PRIVATE_DIR_MODE } from "../secrets/privateFiles.ts";

/**
 * One trust document kept current from its source, a file or an http(s) URL: read with a bounded body, a timeout
 * and an abort at shutdown; the last good copy kept in a disk cache (atomic write, keyed by source, original time
 * kept); fresh while younger than a maximum age; described in one sentence for /readyz, the log and the
 * appraisal's reason. A refresh never throws. What the document means is the caller's `parse`: the Android roots
 * and status list are two of these (androidTrustSource.ts). See src/trust/README.md.
 */

/** pino-compatible: `log.warn({ ...fields }, "message")` */
export interface TrustLog {
  info(obj: object, msg: string): void;
  warn(obj: object, msg: string): void;
  error(obj: object, msg: string): void;
}

export const silentLog: TrustLog = { info() {}, warn() {}, error() {} };

export type SourceState = "ok" | "stale" | "missing";

export interface SourceHealth {
  state: SourceState;
  /** whether the operator named a source (built-in roots are not configured, and never missing or stale) */
  configured: boolean;
  /** the URL or file; for built-in roots, the shipped PEM file */
  source?: string;
  /** where the data in use came from: shipped with attestd, the source itself, or the disk cache after the source failed */
  origin?: "built-in" | "source" | "cache";
  /** when the data in use was obtained from its source (ISO 8601); absent for built-in roots */
  fetchedAt?: string;
  ageSeconds?: number;
  /** roots: certificates; status: entries */
  items?: number;
  /** roots: distinct pinned public keys */
  keys?: number;
  /** a read of the source is under way (e.g. the start-up fetch, still running in the background) */
  pending?: boolean;
  lastAttempt?: string;
  lastError?: string;
  /** one sentence: the facts when `state` is ok, else why this source is unusable (what unavailableReason quotes) */
  summary: string;
}

/** What a sentence says of the data: its count (and distinct keys, for roots), e.g. "5 entries". */
export interface Measure {
  items: number;
  keys?: number;
  text: string;
}

export interface RefreshingSourceOptions<T> {
  /** a file path (or file: URL) or an http(s) URL */
  source: string;
  /** names the source in the log and in parse errors, e.g. "android status" */
  name: string;
  /** how sentences name the document, e.g. "the Android attestation status list", and the verb that goes with it */
  noun: string;
  verb: "is" | "are";
  /** throws (naming `where`) for a body that is not the document: a failed read, never half-used */
  parse(body: Buffer, where: string): T;
  measure(data: T): Measure;
  /** the disk cache: the directory (named in sentences) and this source's file in it */
  cacheDir: string;
  cacheFile: string;
  /** older than this (since it was last obtained from its source) → stale */
  maxAgeSeconds: number;
  /** the setting the stale sentence names, e.g. "--android-max-age" */
  maxAgeSetting: string;
  fetch?: typeof fetch;
  now?: () => Date;
  log?: TrustLog;
  /** per request, answer and body together; default 15 s */
  fetchTimeoutMs?: number;
  /** largest body accepted; default 16 MiB */
  maxBytes?: number;
}

interface Held<T> {
  data: T;
  fetchedAt: Date;
  origin: "source" | "cache";
  sha256: string;
  measure: Measure;
}

interface CacheFile {
  source: string;
  fetchedAt: string;
  body: string;
}

type CacheRead = { body: Buffer; fetchedAt: Date } | { note: string };

export function isUrl(source: string): boolean {
  return /^https?:\/\//i.test(source);
}

/**
 * A failure as a reason can quote it: undici's "fetch failed" hides the cause (ENOTFOUND, ECONNREFUSED…) in
 * `cause`, and a file error's message repeats the path the sentence already names.
 */
function failureText(e: unknown, timeoutMs: number): string {
  const err = e as Error & { code?: string; cause?: { code?: string; message?: string } };
  if (err?.name === "TimeoutError") return `no answer within ${timeoutMs / 1000} s`;
  if (err?.name === "AbortError") return "aborted at shutdown";
  if (err?.message === "fetch failed" && err.cause) return `fetch failed: ${err.cause.code ?? err.cause.message ?? "unknown cause"}`;
  if (typeof err?.code === "string" && /^E[A-Z]+$/.test(err.code)) return err.code;
  return err?.message ?? String(e);
}

export class RefreshingSource<T> {
  readonly source: string;
  /**
   * While true, the outcome of a read is not logged: the caller's start-up line sums up the first load. Problems
   * with the disk cache itself are logged regardless.
   */
  quiet = true;

  private readonly opts: RefreshingSourceOptions<T>;
  private readonly now: () => Date;
  private readonly log: TrustLog;
  private readonly fetchImpl: typeof fetch;
  private readonly timeoutMs: number;
  private readonly maxBytes: number;
  private readonly cachePath: string;
  private readonly noCache: string;
  private aborter = new AbortController();
  private held: Held<T> | undefined;
  private changes = 0;
  private reading: Promise<void> | undefined;
  /** the source itself is being read (not the disk cache): health()'s `pending` */
  private inFlight = false;
  private lastAttempt: Date | undefined;
  private lastError: string | undefined;
  /** what the disk cache held for this source when last looked at; said when nothing else can be used */
  private cacheNote: string | undefined;

  constructor(opts: RefreshingSourceOptions<T>) {
    this.opts = opts;
    this.source = opts.source;
    this.now = opts.now ?? (() => new Date());
    this.log = opts.log ?? silentLog;
    this.fetchImpl = opts.fetch ?? globalThis.fetch;
    this.timeoutMs = opts.fetchTimeoutMs ?? 15_000;
    this.maxBytes = opts.maxBytes ?? 16 * 1024 * 1024;
    this.cachePath = path.join(opts.cacheDir, opts.cacheFile);
    this.noCache = `no cached copy is in ${opts.cacheDir}`;
  }

  /** bumped whenever the data changes (not when identical content is read again), so callers can memoise on it */
  get generation(): number {
    return this.changes;
  }

  /** the data in hand (from the source or the disk cache), fresh or not */
  data(): T | undefined {
    return this.held?.data;
  }

  /**
   * Reads the source once, or joins the read under way (reads never overlap). Never throws: a failure is kept for
   * health() and logged, the data in hand is kept (it ages), and the disk cache stands in while nothing is held.
   */
  refresh(): Promise<void> {
    return (this.reading ??= this.load().finally(() => {
      this.reading = undefined;
    }));
  }

  /**
   * Waits for the read under way; for a URL only up to `waitMs`, after which the disk cache stands in (if nothing
   * is held) while the read carries on in the background. Start-up must not hang on a black-holed network.
   */
  async settle(waitMs: number): Promise<void> {
    const reading = this.reading ?? Promise.resolve();
    if (!isUrl(this.source) || !Number.isFinite(waitMs)) return reading;
    let timer: NodeJS.Timeout | undefined;
    const answered = await Promise.race([
      reading.then(() => true),
      new Promise<false>((resolve) => (timer = setTimeout(resolve, waitMs, false))),
    ]);
    clearTimeout(timer);
    if (!answered) await this.useCache();
  }

  /** Aborts a read under way, so shutdown does not wait for a slow network. */
  stop(): void {
    this.aborter.abort();
    this.aborter = new AbortController();
  }

  state(at: Date): SourceState {
    const held = this.held;
    if (!held) return "missing";
    return at.getTime() - held.fetchedAt.getTime() <= this.opts.maxAgeSeconds * 1000 ? "ok" : "stale";
  }

  health(at: Date): SourceHealth {
    const h: SourceHealth = { state: this.state(at), configured: true, summary: "" };
    h.source = this.source;
    const held = this.held;
    if (held) {
      h.origin = held.origin;
      h.fetchedAt = held.fetchedAt.toISOString();
      h.ageSeconds = Math.floor((at.getTime() - held.fetchedAt.getTime()) / 1000);
      h.items = held.measure.items;
      if (held.measure.keys !== undefined) h.keys = held.measure.keys;
    }
    if (this.inFlight) h.pending = true;
    if (this.lastAttempt) h.lastAttempt = this.lastAttempt.toISOString();
    if (this.lastError) h.lastError = this.lastError;
    h.summary = this.summarize(h);
    return h;
  }

  /**
   * The sentence for this source. It names no age in seconds: callers put it in values that must stay the same
   * object while nothing changes (the appraisal's reason).
   */
  private summarize(h: SourceHealth): string {
    const { noun, verb, cacheDir } = this.opts;
    const from = isUrl(this.source) ? "fetched" : "read";
    if (h.state === "missing") {
      const cache = this.cacheNote ?? this.noCache;
      if (!this.lastError) return `${noun} ${verb} still being ${from} from ${this.source} and ${cache}`;
      return `${noun} could not be ${from} from ${this.source} (${this.lastError}) and ${cache}`;
    }
    const unit = this.held!.measure.text;
    if (h.state === "stale") {
      const viaCache = h.origin === "cache" ? ` (the copy in the disk cache in ${cacheDir})` : "";
      const failed = this.lastError ? `; the last attempt failed: ${this.lastError}` : "";
      return `${noun} ${verb} stale: last obtained ${h.fetchedAt} from ${this.source}${viaCache}, older than ${this.opts.maxAgeSetting} ${this.opts.maxAgeSeconds} s${failed}`;
    }
    let s = `${noun} from ${this.source}: ${unit}, obtained ${h.fetchedAt}`;
    if (h.origin === "cache") {
      s += `, read back from the disk cache in ${cacheDir} (${this.lastError ? `the source failed: ${this.lastError}` : "the source has not answered yet"})`;
    } else if (this.lastError) {
      s += `; the last refresh failed: ${this.lastError}`;
    }
    return s;
  }

  private async load(): Promise<void> {
    const { name } = this.opts;
    const at = this.now();
    this.lastAttempt = at;
    this.inFlight = true;
    try {
      const body = await this.read();
      this.accept(body, at, "source", `${name} ${this.source}`);
      this.lastError = undefined;
      await this.writeCache(at, body);
      if (!this.quiet) this.log.info({ source: this.source, items: this.held?.measure.items }, `${name} loaded`);
      return;
    } catch (e) {
      this.lastError = failureText(e, this.timeoutMs);
      if (!this.quiet) this.log.warn({ source: this.source, err: this.lastError }, `${name}: source failed`);
    } finally {
      this.inFlight = false;
    }
    await this.useCache(); // keeps what is held (it ages towards stale) or falls back to the cache
  }

  private async read(): Promise<Buffer> {
    const source = this.source;
    if (isUrl(source)) {
      // One timer covers the answer and the body. Not AbortSignal.timeout inside AbortSignal.any: in a long-lived
      // process that timeout was seen never to fire, leaving a fetch to a silent peer pending for good.
      const request = new AbortController();
      const shutdown = this.aborter.signal;
      const stopped = () => request.abort(shutdown.reason);
      const timer = setTimeout(() => request.abort(new DOMException("timed out", "TimeoutError")), this.timeoutMs);
      shutdown.addEventListener("abort", stopped, { once: true });
      try {
        const fetchImpl = this.fetchImpl; // called unbound, as the platform's fetch expects
        const res = await fetchImpl(source, {
          signal: request.signal,
          headers: { accept: "application/json, application/x-pem-file, */*" },
        });
        if (!res.ok) {
          await res.body?.cancel().catch(() => undefined);
          throw new Error(`HTTP ${res.status}`);
        }
        return await this.readBody(res);
      } finally {
        clearTimeout(timer);
        shutdown.removeEventListener("abort", stopped);
      }
    }
    const file = source.startsWith("file:") ? fileURLToPath(source) : source;
    const { size } = await stat(file);
    if (size > this.maxBytes) throw new Error(`file of ${size} bytes exceeds ${this.maxBytes}`);
    return readFile(file);
  }

  private async readBody(res: Response): Promise<Buffer> {
    const maxBytes = this.maxBytes;
    const declared = Number(res.headers.get("content-length") ?? "0");
    if (declared > maxBytes) throw new Error(`body of ${declared} bytes exceeds ${maxBytes}`);
    if (!res.body) return Buffer.alloc(0);
    // read in chunks: a body without (or lying about) content-length must not fill memory before the check
    const chunks: Buffer[] = [];
    let total = 0;
    const reader = res.body.getReader();
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      total += value.byteLength;
      if (total > maxBytes) {
        await reader.cancel().catch(() => undefined);
        throw new Error(`body exceeds ${maxBytes} bytes`);
      }
      chunks.push(Buffer.from(value));
    }
    return Buffer.concat(chunks);
  }

  private accept(body: Buffer, fetchedAt: Date, origin: "source" | "cache", where: string): void {
    const sha256 = createHash("sha256").update(body).digest("hex");
    if (this.held && this.held.sha256 === sha256) {
      // same content: keep the same data object so caches keyed on it survive
      this.held = { ...this.held, fetchedAt, origin };
      return;
    }
    const data = this.opts.parse(body, where);
    this.held = { data, fetchedAt, origin, sha256, measure: this.opts.measure(data) };
    this.changes++;
  }

  /** The disk cache stands in only while nothing is held: it keeps its original time, so it never looks fresher. */
  private async useCache(): Promise<void> {
    if (this.held) return;
    const cached = await this.readCache();
    if (this.held) return; // the source answered meanwhile
    if ("note" in cached) {
      this.cacheNote = cached.note;
      return;
    }
    const { name } = this.opts;
    try {
      this.accept(cached.body, cached.fetchedAt, "cache", `${name} cache`);
      this.cacheNote = undefined;
      if (!this.quiet) this.log.warn({ source: this.source, fetchedAt: cached.fetchedAt.toISOString() }, `${name}: using the disk cache`);
    } catch (e) {
      this.cacheNote = `the cached copy ${this.cachePath} is unreadable (${(e as Error).message})`;
      this.log.error({ err: this.cacheNote }, `${name}: the disk cache is unreadable`);
    }
  }

  private async readCache(): Promise<CacheRead> {
    const file = this.cachePath;
    let doc: Partial<CacheFile>;
    try {
      doc = JSON.parse(await readFile(file, "utf8")) as Partial<CacheFile>;
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code === "ENOENT") return { note: this.noCache };
      return { note: `the cached copy ${file} is unreadable (${failureText(e, this.timeoutMs)})` };
    }
    const fetchedAt = new Date(String(doc.fetchedAt));
    if (typeof doc.body !== "string" || Number.isNaN(fetchedAt.getTime())) {
      return { note: `the cached copy ${file} is unreadable (not an attestd cache file)` };
    }
    if (doc.source !== this.source) return { note: `the cached copy ${file} is of another source (${String(doc.source)})` };
    return { body: Buffer.from(doc.body, "base64"), fetchedAt };
  }

  /** Written to a temporary name and renamed, so a crash never leaves half a cache file for the next start. */
  private async writeCache(fetchedAt: Date, body: Buffer): Promise<void> {
    const file = this.cachePath;
    const tmp = `${file}.${process.pid}.tmp`;
    const doc: CacheFile = { source: this.source, fetchedAt: fetchedAt.toISOString(), body: body.toString("base64") };
    try {
      // it sits in (and may create) the data directory, which only the service user may enter
      await mkdir(this.opts.cacheDir, { recursive: true, mode: PRIVATE_DIR_MODE });
      await writeFile(tmp, JSON.stringify(doc));
      await rename(tmp, file);
    } catch (e) {
      this.log.warn({ err: failureText(e, this.timeoutMs), file }, `${this.opts.name}: could not write the disk cache`);
    }
  }
}
