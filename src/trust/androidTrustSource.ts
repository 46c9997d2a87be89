import { createHash } from "node:crypto";
import { mkdir, readFile, rename, stat, writeFile } from "node:fs/promises";
import * as path from "node:path";
import { fileURLToPath } from "node:url";
import type { AllowedBootKey, AndroidPolicy, AndroidTrust, StatusList } from "../attestation/types.ts";
import { EMPTY_STATUS_LIST, parseStatusList } from "../attestation/chain/statusList.ts";
import { readCertificate, splitDerCertificates } from "../attestation/encoding/derChain.ts";
import { parsePemBundle } from "../attestation/encoding/pem.ts";
import { parseAllowedBootKeys } from "../attestation/policy/bootKeys.ts";
import { parseJsonDocument } from "../attestation/encoding/json.ts";

/**
 * The I/O side of android-key trust: Google's attestation roots (built in, or replaced from a file or an http(s)
 * URL) and revocation status list (a file or a URL), cached on disk, refreshed on a timer, aged against a maximum;
 * plus the operator's boot-key allow-list and policy. `current()` hands the appraisal a plain AndroidTrust value
 * (appraisal never does I/O); `health()` says what is missing or stale, for /readyz and the log. See
 * src/trust/README.md.
 */

/** pino-compatible: `log.warn({ ...fields }, "message")` */
export interface TrustLog {
  info(obj: object, msg: string): void;
  warn(obj: object, msg: string): void;
  error(obj: object, msg: string): void;
}

export interface AndroidTrustOptions {
  /**
   * roots: Google's roots JSON (array of PEM strings), a PEM bundle or DER; a file path or an http(s) URL. It
   * replaces the built-in roots entirely; undefined → the built-in roots (googleAttestationRoots.pem).
   */
  rootsSource?: string;
  /** Google's status-list JSON; a file path or an http(s) URL; undefined → missing (android-key fails closed) */
  statusSource?: string;
  /** JSON allow-list of SelfSigned boot keys, [{key, label, models?}] (a local file) */
  allowedBootKeysFile?: string;
  /** where the last good copy of each source is kept (e.g. <data dir>/android-trust) */
  cacheDir: string;
  /** older than this (since it was last obtained from its source) → stale → android-key fails closed */
  maxAgeSeconds: number;
  /** seconds between refreshes once start() is called; 0 disables the timer */
  refreshSeconds: number;
  policy?: AndroidPolicy;
  fetch?: typeof fetch;
  now?: () => Date;
  log?: TrustLog;
  /** per request; default 15 s */
  fetchTimeoutMs?: number;
  /**
   * How long loading waits for a URL before going on with the disk cache (or without); the fetch carries on in
   * the background and its result is used and logged when it lands. Default 3 s: start-up must not hang on a
   * black-holed network. Files and the disk cache are always read before loading returns.
   */
  startupWaitMs?: number;
  /** largest body accepted from a source; default 16 MiB (Google's status list is a few hundred KiB) */
  maxBytes?: number;
}

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

export interface AndroidTrustHealth {
  /** true when android-key appraisal can give Success: roots and status list present and fresh */
  ok: boolean;
  roots: SourceHealth;
  status: SourceHealth;
  /** set when !ok: the same text as current().unavailableReason */
  unavailableReason?: string;
  allowedBootKeys: { source?: string; count: number; lastError?: string };
  maxAgeSeconds: number;
}

export interface AndroidTrustSource {
  /** the trust to appraise with now; the same object as long as nothing changed (keeps per-trust caches) */
  current(): AndroidTrust;
  health(): AndroidTrustHealth;
  /** re-reads every source once; never throws (failures are kept in health() and logged) */
  refresh(): Promise<void>;
  /** starts the refresh timer (unref'd) */
  start(): void;
  /** stops the timer and aborts a fetch under way, so shutdown does not wait for a slow network */
  stop(): void;
}

/** The trust when nothing is loaded: no roots, not fresh → android-key appraisal fails closed. */
export function emptyAndroidTrust(policy: AndroidPolicy = {}): AndroidTrust {
  return {
    pinnedRootSpkiSha256: new Set(),
    rootsDer: [],
    status: EMPTY_STATUS_LIST,
    fresh: false,
    unavailableReason: "no Android attestation roots or status list are loaded",
    allowedBootKeys: [],
    policy,
  };
}

export interface AndroidRoots {
  rootsDer: Uint8Array[];
  /** lowercase hex SHA-256 of each root's SubjectPublicKeyInfo (several roots may share one key) */
  pinnedRootSpkiSha256: Set<string>;
}

/**
 * Reads a roots document: Google's roots JSON (a JSON array of PEM strings, as served by
 * https://android.googleapis.com/attestation/root), a PEM bundle, or DER certificates end to end. Every
 * certificate must be X.509; at least one is required.
 */
export function parseAndroidRoots(body: Uint8Array, source = "android roots"): AndroidRoots {
  const text = Buffer.from(body).toString("utf8").trim();
  let ders: Uint8Array[];
  if (text.startsWith("[")) {
    const doc = parseJsonDocument(text, source);
    if (!Array.isArray(doc) || doc.some((x) => typeof x !== "string")) {
      throw new Error(`${source}: expected a JSON array of PEM certificate strings`);
    }
    ders = (doc as string[]).flatMap((pem, i) => parsePemBundle(pem, `${source}: entry ${i}`));
  } else if (text.includes("-----BEGIN")) {
    ders = parsePemBundle(text, source);
  } else {
    const split = splitDerCertificates(body, 256);
    if (!split) throw new Error(`${source}: neither roots JSON, PEM, nor DER certificates`);
    ders = split.map((d) => new Uint8Array(d));
  }
  if (ders.length === 0) throw new Error(`${source}: no certificates`);
  const pinned = new Set<string>();
  ders.forEach((der, i) => {
    try {
      pinned.add(readCertificate(der).spkiSha256);
    } catch (e) {
      throw new Error(`${source}: certificate ${i} is not X.509 (${(e as Error).message})`);
    }
  });
  return { rootsDer: ders, pinnedRootSpkiSha256: pinned };
}

/** Google's roots as shipped with attestd: the trust when --android-roots is not given. */
export const BUILT_IN_ROOTS_URL = new URL("./googleAttestationRoots.pem", import.meta.url);
const BUILT_IN_ROOTS_FILE = fileURLToPath(BUILT_IN_ROOTS_URL);

let builtInRoots: Promise<AndroidRoots> | undefined;

/**
 * The built-in roots, read once per process. Every trust source shares the same objects, so the appraisal's
 * caches keyed on them stay warm however many sources (tests, CLI) a process opens.
 */
export function loadBuiltInAndroidRoots(): Promise<AndroidRoots> {
  const where = `built-in roots ${BUILT_IN_ROOTS_FILE}`;
  return (builtInRoots ??= readFile(BUILT_IN_ROOTS_URL).then(
    (body) => parseAndroidRoots(body, where),
    (e: NodeJS.ErrnoException) => Promise.reject(new Error(`${where}: ${e.code ?? e.message} (a damaged installation)`)),
  ));
}

interface Held<T> {
  data: T;
  fetchedAt: Date;
  origin: "built-in" | "source" | "cache";
  sha256: string;
  items: number;
}

interface Slot<T> {
  kind: "roots" | "status";
  /** how sentences name it */
  noun: string;
  verb: "is" | "are";
  source?: string;
  held?: Held<T>;
  generation: number;
  inFlight: boolean;
  lastAttempt?: Date;
  lastError?: string;
  /** what the disk cache held for this source when last looked at; said when nothing else can be used */
  cacheNote?: string;
}

interface CacheFile {
  source: string;
  fetchedAt: string;
  body: string;
}

type CacheRead = { body: Buffer; fetchedAt: Date } | { note: string };

const silentLog: TrustLog = { info() {}, warn() {}, error() {} };

function isUrl(source: string): boolean {
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

/**
 * Loads every source once (falling back to the disk cache for a source that fails or does not answer within
 * `startupWaitMs`), logs one line saying whether android-key appraisal is usable and why not, and returns the
 * trust source. Throws only for local configuration: the allow-list file, or a damaged built-in roots file (one
 * clear line); roots and status problems are reported by health() and make android-key fail closed.
 */
export async function loadAndroidTrust(opts: AndroidTrustOptions): Promise<AndroidTrustSource> {
  const now = opts.now ?? (() => new Date());
  const log = opts.log ?? silentLog;
  const fetchImpl = opts.fetch ?? globalThis.fetch;
  const timeoutMs = opts.fetchTimeoutMs ?? 15_000;
  const startupWaitMs = opts.startupWaitMs ?? 3000;
  const maxBytes = opts.maxBytes ?? 16 * 1024 * 1024;
  const maxAgeMs = opts.maxAgeSeconds * 1000;
  const policy = opts.policy ?? {};
  let aborter = new AbortController();
  // the start-up line sums up the first load, so the per-source lines stay quiet until it is written
  let starting = true;

  const roots: Slot<AndroidRoots> = { kind: "roots", noun: "the Android attestation roots", verb: "are", generation: 0, inFlight: false };
  const status: Slot<StatusList> = { kind: "status", noun: "the Android attestation status list", verb: "is", generation: 0, inFlight: false };
  if (opts.rootsSource) roots.source = opts.rootsSource;
  if (opts.statusSource) status.source = opts.statusSource;
  let memoKey = "";
  let memo: AndroidTrust = emptyAndroidTrust(policy);
  /** whether android-key was usable when last looked at; undefined until the start-up line says it first */
  let lastFresh: boolean | undefined;
  let bootKeys: readonly AllowedBootKey[] = [];
  let bootKeysGeneration = 0;
  let bootKeysError: string | undefined;

  const cachePath = (kind: string) => path.join(opts.cacheDir, `android-${kind}.json`);
  const noCache = `no cached copy is in ${opts.cacheDir}`;

  async function readBody(res: Response): Promise<Buffer> {
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

  async function readSource(source: string): Promise<Buffer> {
    if (isUrl(source)) {
      // One timer covers the answer and the body. Not AbortSignal.timeout inside AbortSignal.any: in a long-lived
      // process that timeout was seen never to fire, leaving a fetch to a silent peer pending for good.
      const request = new AbortController();
      const stopped = () => request.abort(aborter.signal.reason);
      const timer = setTimeout(() => request.abort(new DOMException("timed out", "TimeoutError")), timeoutMs);
      const shutdown = aborter.signal;
      shutdown.addEventListener("abort", stopped, { once: true });
      try {
        const res = await fetchImpl(source, {
          signal: request.signal,
          headers: { accept: "application/json, application/x-pem-file, */*" },
        });
        if (!res.ok) {
          await res.body?.cancel().catch(() => undefined);
          throw new Error(`HTTP ${res.status}`);
        }
        return await readBody(res);
      } finally {
        clearTimeout(timer);
        shutdown.removeEventListener("abort", stopped);
      }
    }
    const file = source.startsWith("file:") ? fileURLToPath(source) : source;
    const { size } = await stat(file);
    if (size > maxBytes) throw new Error(`file of ${size} bytes exceeds ${maxBytes}`);
    return readFile(file);
  }

  async function writeCache(kind: string, source: string, fetchedAt: Date, body: Buffer): Promise<void> {
    const file = cachePath(kind);
    const tmp = `${file}.${process.pid}.tmp`;
    const doc: CacheFile = { source, fetchedAt: fetchedAt.toISOString(), body: body.toString("base64") };
    try {
      await mkdir(opts.cacheDir, { recursive: true });
      await writeFile(tmp, JSON.stringify(doc));
      await rename(tmp, file);
    } catch (e) {
      log.warn({ err: failureText(e, timeoutMs), file }, `android ${kind}: could not write the disk cache`);
    }
  }

  async function readCache(kind: string, source: string): Promise<CacheRead> {
    const file = cachePath(kind);
    let doc: Partial<CacheFile>;
    try {
      doc = JSON.parse(await readFile(file, "utf8")) as Partial<CacheFile>;
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code === "ENOENT") return { note: noCache };
      return { note: `the cached copy ${file} is unreadable (${failureText(e, timeoutMs)})` };
    }
    const fetchedAt = new Date(String(doc.fetchedAt));
    if (typeof doc.body !== "string" || Number.isNaN(fetchedAt.getTime())) {
      return { note: `the cached copy ${file} is unreadable (not an attestd cache file)` };
    }
    if (doc.source !== source) return { note: `the cached copy ${file} is of another source (${String(doc.source)})` };
    return { body: Buffer.from(doc.body, "base64"), fetchedAt };
  }

  function accept<T>(slot: Slot<T>, parse: (body: Buffer, where: string) => T, count: (t: T) => number,
    body: Buffer, fetchedAt: Date, origin: "source" | "cache", where: string): void {
    const sha256 = createHash("sha256").update(body).digest("hex");
    if (slot.held && slot.held.sha256 === sha256) {
      // same content: keep the same data object so caches keyed on it survive
      slot.held = { ...slot.held, fetchedAt, origin };
      return;
    }
    const data = parse(body, where);
    slot.held = { data, fetchedAt, origin, sha256, items: count(data) };
    slot.generation++;
  }

  /** The disk cache stands in only while nothing is held: it keeps its original time, so it never looks fresher. */
  async function useCache<T>(slot: Slot<T>, parse: (body: Buffer, where: string) => T, count: (t: T) => number): Promise<void> {
    const source = slot.source;
    if (!source || slot.held) return;
    const cached = await readCache(slot.kind, source);
    if (slot.held) return; // the source answered meanwhile
    if ("note" in cached) {
      slot.cacheNote = cached.note;
      return;
    }
    try {
      accept(slot, parse, count, cached.body, cached.fetchedAt, "cache", `android ${slot.kind} cache`);
      delete slot.cacheNote;
      if (!starting) log.warn({ source, fetchedAt: cached.fetchedAt.toISOString() }, `android ${slot.kind}: using the disk cache`);
    } catch (e) {
      slot.cacheNote = `the cached copy ${cachePath(slot.kind)} is unreadable (${(e as Error).message})`;
      log.error({ err: slot.cacheNote }, `android ${slot.kind}: the disk cache is unreadable`);
    }
  }

  async function load<T>(slot: Slot<T>, parse: (body: Buffer, where: string) => T, count: (t: T) => number): Promise<void> {
    const source = slot.source;
    if (!source) return;
    const at = now();
    slot.lastAttempt = at;
    slot.inFlight = true;
    try {
      const body = await readSource(source);
      accept(slot, parse, count, body, at, "source", `android ${slot.kind} ${source}`);
      delete slot.lastError;
      await writeCache(slot.kind, source, at, body);
      if (!starting) log.info({ source, items: slot.held?.items }, `android ${slot.kind} loaded`);
      return;
    } catch (e) {
      slot.lastError = failureText(e, timeoutMs);
      if (!starting) log.warn({ source, err: slot.lastError }, `android ${slot.kind}: source failed`);
    } finally {
      slot.inFlight = false;
    }
    await useCache(slot, parse, count); // keeps what is held (it ages towards stale) or falls back to the cache
  }

  async function loadBootKeys(initial: boolean): Promise<void> {
    const file = opts.allowedBootKeysFile;
    if (!file) return;
    try {
      const list = parseAllowedBootKeys(await readFile(file, "utf8"), `allowed boot keys ${file}`);
      if (JSON.stringify(list) !== JSON.stringify(bootKeys)) {
        bootKeys = list;
        bootKeysGeneration++;
      }
      bootKeysError = undefined;
    } catch (e) {
      const msg = (e as NodeJS.ErrnoException).code ? `allowed boot keys ${file}: ${(e as NodeJS.ErrnoException).code}` : (e as Error).message;
      if (initial) throw new Error(msg);
      bootKeysError = msg;
      log.error({ err: msg }, "allowed boot keys: reload failed, keeping the previous list");
    }
  }

  const parseRoots = (body: Buffer, where: string) => parseAndroidRoots(body, where);
  const parseStatus = (body: Buffer, where: string) => parseStatusList(body.toString("utf8"), where);
  const countRoots = (r: AndroidRoots) => r.rootsDer.length;
  const countStatus = (s: StatusList) => s.size;

  let refreshing: Promise<void> | undefined;
  /** Starts one read of each source; the returned promises are per slot, `refreshing` covers them all. */
  function startLoads(withBootKeys: boolean): [Promise<void>, Promise<void>] {
    const r = load(roots, parseRoots, countRoots);
    const s = load(status, parseStatus, countStatus);
    const all = Promise.all([r, s, withBootKeys ? loadBootKeys(false) : undefined]);
    refreshing = all.then(
      () => noteState(),
      () => undefined,
    ).finally(() => {
      refreshing = undefined;
    });
    return [r, s];
  }
  const refresh = () => refreshing ?? (startLoads(true), refreshing!);

  /** Waits for a slot's first load; a URL only up to startupWaitMs, then the disk cache stands in meanwhile. */
  async function firstLoad<T>(slot: Slot<T>, loading: Promise<void>, parse: (b: Buffer, w: string) => T, count: (t: T) => number) {
    if (!slot.source || !isUrl(slot.source) || !Number.isFinite(startupWaitMs)) return loading;
    let timer: NodeJS.Timeout | undefined;
    const answered = await Promise.race([
      loading.then(() => true),
      new Promise<false>((resolve) => (timer = setTimeout(resolve, startupWaitMs, false))),
    ]);
    clearTimeout(timer);
    if (!answered) await useCache(slot, parse, count);
  }

  await loadBootKeys(true);
  if (!roots.source) {
    const builtIn = await loadBuiltInAndroidRoots();
    roots.held = { data: builtIn, fetchedAt: now(), origin: "built-in", sha256: "built-in", items: builtIn.rootsDer.length };
  }
  const [rootsLoading, statusLoading] = startLoads(false);
  await Promise.all([
    firstLoad(roots, rootsLoading, parseRoots, countRoots),
    firstLoad(status, statusLoading, parseStatus, countStatus),
  ]);

  function stateOf<T>(slot: Slot<T>, at: Date): SourceState {
    const held = slot.held;
    if (!held) return "missing";
    if (held.origin === "built-in") return "ok";
    return at.getTime() - held.fetchedAt.getTime() <= maxAgeMs ? "ok" : "stale";
  }

  function slotHealth<T>(slot: Slot<T>, at: Date): SourceHealth {
    const h: SourceHealth = { state: stateOf(slot, at), configured: slot.source !== undefined, summary: "" };
    const held = slot.held;
    if (held?.origin === "built-in") {
      const keys = (held.data as AndroidRoots).pinnedRootSpkiSha256.size;
      return {
        state: "ok",
        configured: false,
        source: BUILT_IN_ROOTS_FILE,
        origin: "built-in",
        items: held.items,
        keys,
        summary: `Google's roots are built in: ${held.items} certificates, ${keys} keys`,
      };
    }
    if (slot.source) h.source = slot.source;
    if (held) {
      const age = at.getTime() - held.fetchedAt.getTime();
      h.origin = held.origin;
      h.fetchedAt = held.fetchedAt.toISOString();
      h.ageSeconds = Math.floor(age / 1000);
      h.items = held.items;
      if (slot.kind === "roots") h.keys = (held.data as AndroidRoots).pinnedRootSpkiSha256.size;
    }
    if (slot.inFlight) h.pending = true;
    if (slot.lastAttempt) h.lastAttempt = slot.lastAttempt.toISOString();
    if (slot.lastError) h.lastError = slot.lastError;
    else if (!slot.source) h.lastError = "not configured";
    h.summary = summarize(slot, h);
    return h;
  }

  /**
   * The sentence for one source. It names no age in seconds: the reason becomes part of current()'s value, which
   * must stay the same object while nothing changes.
   */
  function summarize<T>(slot: Slot<T>, h: SourceHealth): string {
    const where = h.source ?? "";
    const from = slot.source && isUrl(slot.source) ? "fetched" : "read";
    if (h.state === "missing") {
      if (!slot.source) return `no ${slot.noun.replace(/^the /, "")} is configured (--android-${slot.kind})`;
      const cache = slot.cacheNote ?? noCache;
      if (!slot.lastError) return `${slot.noun} ${slot.verb} still being ${from} from ${where} and ${cache}`;
      return `${slot.noun} could not be ${from} from ${where} (${slot.lastError}) and ${cache}`;
    }
    const unit = slot.kind === "roots" ? `${h.items} certificates, ${h.keys} keys` : `${h.items} entries`;
    if (h.state === "stale") {
      const viaCache = h.origin === "cache" ? ` (the copy in the disk cache in ${opts.cacheDir})` : "";
      const failed = slot.lastError ? `; the last attempt failed: ${slot.lastError}` : "";
      return `${slot.noun} ${slot.verb} stale: last obtained ${h.fetchedAt} from ${where}${viaCache}, older than --android-max-age ${opts.maxAgeSeconds} s${failed}`;
    }
    let s = `${slot.noun} from ${where}: ${unit}, obtained ${h.fetchedAt}`;
    if (h.origin === "cache") {
      s += `, read back from the disk cache in ${opts.cacheDir} (${slot.lastError ? `the source failed: ${slot.lastError}` : "the source has not answered yet"})`;
    } else if (slot.lastError) {
      s += `; the last refresh failed: ${slot.lastError}`;
    }
    return s;
  }

  function snapshot(at: Date) {
    const r = slotHealth(roots, at);
    const s = slotHealth(status, at);
    const fresh = r.state === "ok" && s.state === "ok";
    const reason = fresh ? undefined : [r, s].filter((h) => h.state !== "ok").map((h) => h.summary).join("; ");
    return { r, s, fresh, reason };
  }

  /** Logs when android-key turns usable or unusable (after the start-up line, which says the first state). */
  function noteState(snap = snapshot(now())): void {
    if (lastFresh === undefined || snap.fresh === lastFresh) return;
    lastFresh = snap.fresh;
    logState(snap);
  }

  function logState(snap: ReturnType<typeof snapshot>): void {
    const fields = {
      roots: { state: snap.r.state, origin: snap.r.origin, source: snap.r.source, items: snap.r.items, keys: snap.r.keys },
      status: { state: snap.s.state, origin: snap.s.origin, source: snap.s.source, items: snap.s.items, fetchedAt: snap.s.fetchedAt },
    };
    if (snap.fresh) log.info(fields, `android-key trust is usable: ${snap.r.summary}; ${snap.s.summary}`);
    else log.warn(fields, `android-key appraisal fails closed: ${snap.reason}`);
  }

  function current(): AndroidTrust {
    const at = now();
    const fresh = stateOf(roots, at) === "ok" && stateOf(status, at) === "ok";
    // called for every appraisal: the sentences are built only when there is something to say
    let reason: string | undefined;
    if (!fresh || fresh !== lastFresh) {
      const snap = snapshot(at);
      noteState(snap);
      reason = snap.reason;
    }
    const key = `${roots.generation}:${status.generation}:${bootKeysGeneration}:${fresh}:${reason ?? ""}`;
    if (key !== memoKey) {
      memoKey = key;
      memo = {
        pinnedRootSpkiSha256: roots.held?.data.pinnedRootSpkiSha256 ?? new Set(),
        rootsDer: roots.held?.data.rootsDer ?? [],
        status: status.held?.data ?? EMPTY_STATUS_LIST,
        fresh,
        ...(reason !== undefined ? { unavailableReason: reason } : {}),
        allowedBootKeys: bootKeys,
        policy,
      };
    }
    return memo;
  }

  const first = snapshot(now());
  lastFresh = first.fresh;
  starting = false;
  logState(first);

  let timer: NodeJS.Timeout | undefined;
  return {
    current,
    health() {
      const snap = snapshot(now());
      noteState(snap);
      const boot: AndroidTrustHealth["allowedBootKeys"] = { count: bootKeys.length };
      if (opts.allowedBootKeysFile) boot.source = opts.allowedBootKeysFile;
      if (bootKeysError) boot.lastError = bootKeysError;
      return {
        ok: snap.fresh,
        roots: snap.r,
        status: snap.s,
        ...(snap.reason !== undefined ? { unavailableReason: snap.reason } : {}),
        allowedBootKeys: boot,
        maxAgeSeconds: opts.maxAgeSeconds,
      };
    },
    refresh,
    start() {
      if (timer || opts.refreshSeconds <= 0) return;
      timer = setInterval(() => void refresh(), opts.refreshSeconds * 1000);
      timer.unref();
    },
    stop() {
      if (timer) clearInterval(timer);
      timer = undefined;
      aborter.abort();
      aborter = new AbortController();
    },
  };
}
