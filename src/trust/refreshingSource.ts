import { createHash } from "node:crypto";
import { mkdir, readFile, rename, stat, writeFile } from "node:fs/promises";
import * as path from "node:path";
import { fileURLToPath } from "node:url";
import { boundedFetch, FetchRefused } from "../net/boundedFetch.ts";
import { PRIVATE_DIR_MODE } from "../secrets/privateFiles.ts";

/**
 * One trust document kept current from its source, a file or an http(s) URL: read with a bounded body, a timeout
 * and an abort at shutdown; the last good copy kept in a disk cache (atomic write, keyed by source, original time
 * kept); fresh while younger than a maximum age; described twice: one sentence for the log and operators
 * (`summary`, naming the source and the cache) and the same without them for everyone else (`reason`: tenant
 * viewers, the appraisal's reason). A refresh never throws. What the document means is the caller's `parse`: the
 * Android roots and status list are two of these (androidTrustSource.ts). See src/trust/README.md.
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
  /** operators only: names the URL or file (and the cache file) */
  lastError?: string;
  /**
   * Why the source is not simply fine, in words that name no URL, file or directory: what a tenant viewer is shown
   * (src/services/trustSources.ts) and what the appraisal's reason quotes (androidTrustSource.ts), so no verdict
   * names one. Absent while the source is ok, unheld and its last read succeeded.
   */
  reason?: string;
  /** the last copy read from the source was held back (too many entries lost): the copy in force stays */
  heldBack?: HeldBack;
  /** copies held back since start (the attestd_trust_refresh_held_total counter); absent for fixed parts */
  heldTotal?: number;
  /**
   * Operators only (the log, the operators' portal page), one sentence naming the source and the cache: the facts
   * when `state` is ok, else why this source is unusable.
   */
  summary: string;
}

/** What a sentence says of the data: its count (and distinct keys, for roots), e.g. "5 entries". */
export interface Measure {
  items: number;
  keys?: number;
  text: string;
}

/** A copy read from the source and not put in force because it lost too many of the entries in force. */
export interface HeldBack {
  /** when it was read (ISO 8601) */
  at: string;
  /** its entries (or certificates) */
  items: number;
  /** the entries (or certificates) of the copy in force */
  inForce: number;
  /** the share lost, in percent, rounded down */
  lostPercent: number;
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
  /**
   * A copy that loses more than this share (percent) of the entries in force (the copy held, or the disk cache at
   * start-up) is held back: the copy in force stays. 100 (the default) accepts any copy that parses.
   */
  maxShrinkPercent?: number;
  /** the setting the held-back sentence names, e.g. "--android-max-shrink" */
  maxShrinkSetting?: string;
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

/**
 * A failure whose message names the source, with the same said without a URL or path (`publicText`): the message
 * is for operators, the public text for tenant viewers.
 */
class SourceFailure extends Error {
  constructor(
    message: string,
    readonly publicText: string = message,
  ) {
    super(message);
  }
}

export function isUrl(source: string): boolean {
  return /^https?:\/\//i.test(source);
}

/**
 * A failure as a reason can quote it: undici's "fetch failed" hides the cause (ENOTFOUND, ECONNREFUSED…) in
 * `cause`, and a file error's message repeats the path the sentence already names. `text` is for operators;
 * `public` names no URL, host or path (a cause's message or a parse error may), for tenant viewers.
 */
function describeFailure(e: unknown, timeoutMs: number): { text: string; public: string } {
  const err = e as Error & { code?: string; cause?: { code?: string; message?: string } };
  const same = (text: string) => ({ text, public: text });
  if (err instanceof SourceFailure || err instanceof FetchRefused) return { text: err.message, public: err.publicText };
  if (err?.name === "TimeoutError") return same(`no answer within ${timeoutMs / 1000} s`);
  if (err?.name === "AbortError") return same("aborted at shutdown");
  if (err?.message === "fetch failed" && err.cause) {
    const code = err.cause.code;
    return { text: `fetch failed: ${code ?? err.cause.message ?? "unknown cause"}`, public: `fetch failed: ${code ?? "network error"}` };
  }
  if (typeof err?.code === "string" && /^E[A-Z]+$/.test(err.code)) return same(err.code);
  return { text: err?.message ?? String(e), public: "the read failed" };
}

function failureText(e: unknown, timeoutMs: number): string {
  return describeFailure(e, timeoutMs).text;
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
  private lastErrorPublic: string | undefined;
  private heldBack: HeldBack | undefined;
  private heldTotal = 0;
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
    if (this.heldBack) h.heldBack = this.heldBack;
    if (this.guarded) h.heldTotal = this.heldTotal;
    h.summary = this.summarize(h);
    const reason = this.publicReason(h);
    if (reason) h.reason = reason;
    return h;
  }

  /** whether a copy that loses entries can be held back (maxShrinkPercent below 100) */
  private get guarded(): boolean {
    return (this.opts.maxShrinkPercent ?? 100) < 100;
  }

  /** The sentence of summarize() without the URL, the file or the cache directory: what anyone may be shown. */
  private publicReason(h: SourceHealth): string | undefined {
    const { noun, verb } = this.opts;
    const from = isUrl(this.source) ? "fetched" : "read";
    const failed = this.lastErrorPublic;
    if (h.state === "missing") {
      if (!failed) return `${noun} ${verb} still being ${from}`;
      return `${noun} could not be ${from} (${failed}) and no usable copy is in the disk cache`;
    }
    if (h.state === "stale") {
      return `${noun} ${verb} stale: last obtained ${h.fetchedAt}, older than the maximum age${failed ? `; the last attempt failed: ${failed}` : ""}`;
    }
    if (h.heldBack) return `${this.heldSentence(h.heldBack)}; the copy obtained ${h.fetchedAt} stays in force`;
    if (h.origin === "cache") return `read back from the disk cache (${failed ? `the source failed: ${failed}` : "the source has not answered yet"})`;
    if (failed) return `the last refresh failed: ${failed}`;
    return undefined;
  }

  private heldSentence(held: HeldBack): string {
    return (
      `a new copy was held back at ${held.at}: it has ${held.items} where the copy in force has ${held.inForce} ` +
      `(${held.lostPercent}% fewer, more than ${this.opts.maxShrinkSetting ?? "the allowed share"} ${this.opts.maxShrinkPercent}%)`
    );
  }

  /**
   * The operator's sentence for this source. It names no age in seconds, like publicReason, whose words the
   * appraisal's reason quotes in values that must stay the same object while nothing changes.
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
      const held = h.heldBack ? `; ${this.heldSentence(h.heldBack)}` : "";
      return `${noun} ${verb} stale: last obtained ${h.fetchedAt} from ${this.source}${viaCache}, older than ${this.opts.maxAgeSetting} ${this.opts.maxAgeSeconds} s${held}${failed}`;
    }
    let s = `${noun} from ${this.source}: ${unit}, obtained ${h.fetchedAt}`;
    if (h.heldBack) {
      const viaCache = h.origin === "cache" ? ` (the copy in the disk cache in ${cacheDir})` : "";
      s += `${viaCache}; ${this.heldSentence(h.heldBack)} from ${this.source}, and stays out until a copy that keeps enough is read or the operator accepts it (docs/android-key.md)`;
    } else if (h.origin === "cache") {
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
      // after a restart the disk cache is the copy in force a new one is measured against
      if (this.guarded && !this.held) await this.useCache();
      const held = this.accept(body, at, "source", `${name} ${this.source}`, this.guarded);
      if (held) {
        this.holdBack(held);
        return;
      }
      this.lastError = this.lastErrorPublic = this.heldBack = undefined;
      await this.writeCache(at, body);
      if (!this.quiet) this.log.info({ source: this.source, items: this.held?.measure.items }, `${name} loaded`);
      return;
    } catch (e) {
      const failure = describeFailure(e, this.timeoutMs);
      this.lastError = failure.text;
      this.lastErrorPublic = failure.public;
      if (!this.quiet) this.log.warn({ source: this.source, err: this.lastError }, `${name}: source failed`);
    } finally {
      this.inFlight = false;
    }
    await this.useCache(); // keeps what is held (it ages towards stale) or falls back to the cache
  }

  /**
   * A copy that lost too much is not used, not cached, and logged whether quiet or not: an emptied list would
   * otherwise lift every revocation at once. The copy in force keeps its time, so it still ages towards stale.
   */
  private holdBack(held: HeldBack): void {
    this.heldBack = held;
    this.heldTotal++;
    this.lastError = this.lastErrorPublic = `held back: ${held.items} where ${held.inForce} are in force (${held.lostPercent}% fewer)`;
    this.log.warn(
      { source: this.source, items: held.items, inForce: held.inForce, lostPercent: held.lostPercent, maxShrinkPercent: this.opts.maxShrinkPercent },
      `${this.opts.name}: ${this.heldSentence(held)}; the copy in force stays`,
    );
  }

  private async read(): Promise<Buffer> {
    const source = this.source;
    if (isUrl(source)) {
      const res = await boundedFetch(
        source,
        { headers: { accept: "application/json, application/x-pem-file, */*" } },
        // an error page is not wanted even in part: the status says it all (maxErrorBytes 0)
        { fetch: this.fetchImpl, timeoutMs: this.timeoutMs, maxBytes: this.maxBytes, maxErrorBytes: 0, signal: this.aborter.signal },
      );
      if (res.status < 200 || res.status >= 300) throw new SourceFailure(`HTTP ${res.status}`);
      return res.body;
    }
    const file = source.startsWith("file:") ? fileURLToPath(source) : source;
    const { size } = await stat(file);
    if (size > this.maxBytes) throw new SourceFailure(`file of ${size} bytes exceeds ${this.maxBytes}`);
    return readFile(file);
  }

  /**
   * Puts a body in force, or (`guard`) answers how it was held back for losing more than maxShrinkPercent of the
   * entries in force. A body that does not parse throws and changes nothing.
   */
  private accept(body: Buffer, fetchedAt: Date, origin: "source" | "cache", where: string, guard = false): HeldBack | undefined {
    const sha256 = createHash("sha256").update(body).digest("hex");
    if (this.held && this.held.sha256 === sha256) {
      // same content: keep the same data object so caches keyed on it survive
      this.held = { ...this.held, fetchedAt, origin };
      return undefined;
    }
    let data: T;
    try {
      data = this.opts.parse(body, where);
    } catch (e) {
      throw new SourceFailure((e as Error).message, `what was read is not ${this.opts.noun}`);
    }
    const measure = this.opts.measure(data);
    const inForce = this.held?.measure.items ?? 0;
    if (guard && inForce > 0) {
      const lostPercent = Math.max(0, Math.floor(((inForce - measure.items) / inForce) * 100));
      // compared exactly, not on the rounded share: 1 of 3 lost is more than 33%
      if ((inForce - measure.items) * 100 > inForce * (this.opts.maxShrinkPercent ?? 100)) {
        return { at: fetchedAt.toISOString(), items: measure.items, inForce, lostPercent };
      }
    }
    this.held = { data, fetchedAt, origin, sha256, measure };
    this.changes++;
    return undefined;
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
