import { createHash } from "node:crypto";
import { mkdir, readFile, rename, writeFile } from "node:fs/promises";
import * as path from "node:path";
import { fileURLToPath } from "node:url";
import type { AllowedBootKey, AndroidPolicy, AndroidTrust, StatusList } from "../attestation/types.ts";
import { EMPTY_STATUS_LIST, parseStatusList } from "../attestation/chain/statusList.ts";
import { readCertificate, splitDerCertificates } from "../attestation/encoding/derChain.ts";
import { parsePemBundle } from "../attestation/encoding/pem.ts";
import { parseAllowedBootKeys } from "../attestation/policy/bootKeys.ts";
import { parseJsonDocument } from "../attestation/encoding/json.ts";

/**
 * The I/O side of android-key trust: Google's attestation roots and revocation status list, read from a file or
 * an http(s) URL, cached on disk, refreshed on a timer, aged against a maximum; plus the operator's boot-key
 * allow-list and policy. `current()` hands the appraisal a plain AndroidTrust value (appraisal never does I/O);
 * `health()` says what is missing or stale, for /readyz and the log. See src/trust/README.md.
 */

/** pino-compatible: `log.warn({ ...fields }, "message")` */
export interface TrustLog {
  info(obj: object, msg: string): void;
  warn(obj: object, msg: string): void;
  error(obj: object, msg: string): void;
}

export interface AndroidTrustOptions {
  /** roots: Google's roots JSON (array of PEM strings), a PEM bundle or DER; a file path or an http(s) URL */
  rootsSource?: string;
  /** Google's status-list JSON; a file path or an http(s) URL */
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
  /** largest body accepted from a source; default 16 MiB (Google's status list is a few hundred KiB) */
  maxBytes?: number;
}

export type SourceState = "ok" | "stale" | "missing";

export interface SourceHealth {
  state: SourceState;
  configured: boolean;
  source?: string;
  /** where the data in use came from: the source itself, or the disk cache after the source failed */
  origin?: "source" | "cache";
  /** when the data in use was obtained from its source (ISO 8601) */
  fetchedAt?: string;
  ageSeconds?: number;
  /** roots: certificates; status: entries */
  items?: number;
  lastAttempt?: string;
  lastError?: string;
}

export interface AndroidTrustHealth {
  /** true when android-key appraisal can give Success: roots and status list present and fresh */
  ok: boolean;
  roots: SourceHealth;
  status: SourceHealth;
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
  stop(): void;
}

/** The trust when nothing is configured: no roots, not fresh → android-key appraisal fails closed. */
export function emptyAndroidTrust(policy: AndroidPolicy = {}): AndroidTrust {
  return {
    pinnedRootSpkiSha256: new Set(),
    rootsDer: [],
    status: EMPTY_STATUS_LIST,
    fresh: false,
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

interface Held<T> {
  data: T;
  fetchedAt: Date;
  origin: "source" | "cache";
  sha256: string;
  items: number;
}

interface Slot<T> {
  kind: "roots" | "status";
  source?: string;
  held?: Held<T>;
  generation: number;
  lastAttempt?: Date;
  lastError?: string;
}

interface CacheFile {
  source: string;
  fetchedAt: string;
  body: string;
}

const silentLog: TrustLog = { info() {}, warn() {}, error() {} };

function isUrl(source: string): boolean {
  return /^https?:\/\//i.test(source);
}

/**
 * Loads every configured source once (falling back to the disk cache for a source that fails) and returns the
 * trust source. Throws only for the allow-list file (local configuration: a bad file stops start-up with one
 * line); roots and status problems are reported by health() and make android-key fail closed.
 */
export async function loadAndroidTrust(opts: AndroidTrustOptions): Promise<AndroidTrustSource> {
  const now = opts.now ?? (() => new Date());
  const log = opts.log ?? silentLog;
  const fetchImpl = opts.fetch ?? globalThis.fetch;
  const timeoutMs = opts.fetchTimeoutMs ?? 15_000;
  const maxBytes = opts.maxBytes ?? 16 * 1024 * 1024;
  const maxAgeMs = opts.maxAgeSeconds * 1000;
  const policy = opts.policy ?? {};

  const roots: Slot<AndroidRoots> = { kind: "roots", generation: 0 };
  const status: Slot<StatusList> = { kind: "status", generation: 0 };
  if (opts.rootsSource) roots.source = opts.rootsSource;
  if (opts.statusSource) status.source = opts.statusSource;
  let bootKeys: readonly AllowedBootKey[] = [];
  let bootKeysGeneration = 0;
  let bootKeysError: string | undefined;

  const cachePath = (kind: string) => path.join(opts.cacheDir, `android-${kind}.json`);

  async function readSource(source: string): Promise<Buffer> {
    if (isUrl(source)) {
      const res = await fetchImpl(source, {
        signal: AbortSignal.timeout(timeoutMs),
        headers: { accept: "application/json, application/x-pem-file, */*" },
      });
      if (!res.ok) throw new Error(`HTTP ${res.status}`);
      const declared = Number(res.headers.get("content-length") ?? "0");
      if (declared > maxBytes) throw new Error(`body of ${declared} bytes exceeds ${maxBytes}`);
      const body = Buffer.from(await res.arrayBuffer());
      if (body.length > maxBytes) throw new Error(`body of ${body.length} bytes exceeds ${maxBytes}`);
      return body;
    }
    const file = source.startsWith("file:") ? fileURLToPath(source) : source;
    const body = await readFile(file);
    if (body.length > maxBytes) throw new Error(`file of ${body.length} bytes exceeds ${maxBytes}`);
    return body;
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
      log.warn({ err: (e as Error).message, file }, `android ${kind}: could not write the disk cache`);
    }
  }

  async function readCache(kind: string, source: string): Promise<{ body: Buffer; fetchedAt: Date } | undefined> {
    let doc: Partial<CacheFile>;
    try {
      doc = JSON.parse(await readFile(cachePath(kind), "utf8")) as Partial<CacheFile>;
    } catch {
      return undefined;
    }
    const fetchedAt = new Date(String(doc.fetchedAt));
    if (doc.source !== source || typeof doc.body !== "string" || Number.isNaN(fetchedAt.getTime())) return undefined;
    return { body: Buffer.from(doc.body, "base64"), fetchedAt };
  }

  async function load<T>(slot: Slot<T>, parse: (body: Buffer, where: string) => T, count: (t: T) => number): Promise<void> {
    const source = slot.source;
    if (!source) return;
    const at = now();
    slot.lastAttempt = at;
    const accept = (body: Buffer, fetchedAt: Date, origin: "source" | "cache", where: string) => {
      const sha256 = createHash("sha256").update(body).digest("hex");
      if (slot.held && slot.held.sha256 === sha256) {
        // same content: keep the same data object so caches keyed on it survive
        slot.held = { ...slot.held, fetchedAt, origin };
        return;
      }
      const data = parse(body, where);
      slot.held = { data, fetchedAt, origin, sha256, items: count(data) };
      slot.generation++;
    };
    try {
      const body = await readSource(source);
      accept(body, at, "source", `android ${slot.kind} ${source}`);
      delete slot.lastError;
      await writeCache(slot.kind, source, at, body);
      log.info({ source, items: slot.held?.items }, `android ${slot.kind} loaded`);
      return;
    } catch (e) {
      slot.lastError = (e as Error).message;
      log.warn({ source, err: slot.lastError }, `android ${slot.kind}: source failed`);
    }
    if (slot.held) return; // keep what we have; it ages towards stale
    const cached = await readCache(slot.kind, source);
    if (!cached) return;
    try {
      accept(cached.body, cached.fetchedAt, "cache", `android ${slot.kind} cache`);
      log.warn({ source, fetchedAt: cached.fetchedAt.toISOString() }, `android ${slot.kind}: using the disk cache`);
    } catch (e) {
      log.error({ err: (e as Error).message }, `android ${slot.kind}: the disk cache is unreadable`);
    }
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

  let refreshing: Promise<void> | undefined;
  const refresh = () =>
    (refreshing ??= (async () => {
      try {
        await Promise.all([
          load(roots, parseRoots, (r) => r.rootsDer.length),
          load(status, parseStatus, (s) => s.size),
          loadBootKeys(false),
        ]);
      } finally {
        refreshing = undefined;
      }
    })());

  await loadBootKeys(true);
  await Promise.all([
    load(roots, parseRoots, (r) => r.rootsDer.length),
    load(status, parseStatus, (s) => s.size),
  ]);

  function slotHealth<T>(slot: Slot<T>, at: Date): SourceHealth {
    const h: SourceHealth = { state: "missing", configured: slot.source !== undefined };
    if (slot.source) h.source = slot.source;
    if (slot.held) {
      const age = at.getTime() - slot.held.fetchedAt.getTime();
      h.state = age <= maxAgeMs ? "ok" : "stale";
      h.origin = slot.held.origin;
      h.fetchedAt = slot.held.fetchedAt.toISOString();
      h.ageSeconds = Math.floor(age / 1000);
      h.items = slot.held.items;
    }
    if (slot.lastAttempt) h.lastAttempt = slot.lastAttempt.toISOString();
    if (slot.lastError) h.lastError = slot.lastError;
    else if (!slot.source) h.lastError = "not configured";
    return h;
  }

  let memoKey = "";
  let memo: AndroidTrust = emptyAndroidTrust(policy);
  let lastFresh: boolean | undefined;

  function current(): AndroidTrust {
    const at = now();
    const r = slotHealth(roots, at);
    const s = slotHealth(status, at);
    const fresh = r.state === "ok" && s.state === "ok";
    if (fresh !== lastFresh) {
      if (lastFresh !== undefined || !fresh) {
        const fields = { roots: r.state, status: s.state, rootsError: r.lastError, statusError: s.lastError };
        if (fresh) log.info(fields, "android trust is fresh; android-key appraisal enabled");
        else log.warn(fields, "android trust is missing or stale; android-key appraisal fails closed");
      }
      lastFresh = fresh;
    }
    const key = `${roots.generation}:${status.generation}:${bootKeysGeneration}:${fresh}`;
    if (key !== memoKey) {
      memoKey = key;
      memo = {
        pinnedRootSpkiSha256: roots.held?.data.pinnedRootSpkiSha256 ?? new Set(),
        rootsDer: roots.held?.data.rootsDer ?? [],
        status: status.held?.data ?? EMPTY_STATUS_LIST,
        fresh,
        allowedBootKeys: bootKeys,
        policy,
      };
    }
    return memo;
  }

  let timer: NodeJS.Timeout | undefined;
  return {
    current,
    health() {
      const at = now();
      const r = slotHealth(roots, at);
      const s = slotHealth(status, at);
      const boot: AndroidTrustHealth["allowedBootKeys"] = { count: bootKeys.length };
      if (opts.allowedBootKeysFile) boot.source = opts.allowedBootKeysFile;
      if (bootKeysError) boot.lastError = bootKeysError;
      return { ok: r.state === "ok" && s.state === "ok", roots: r, status: s, allowedBootKeys: boot, maxAgeSeconds: opts.maxAgeSeconds };
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
    },
  };
}
