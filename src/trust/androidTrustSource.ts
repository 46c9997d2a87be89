import { readFile } from "node:fs/promises";
import { fileURLToPath } from "node:url";
import type { AllowedBootKey, AndroidPolicy, AndroidTrust, StatusList } from "../attestation/types.ts";
import { EMPTY_STATUS_LIST, parseStatusList } from "../attestation/chain/statusList.ts";
import { readCertificate, splitDerCertificates } from "../attestation/encoding/derChain.ts";
import { parsePemBundle } from "../attestation/encoding/pem.ts";
import { parseAllowedBootKeys } from "../attestation/policy/bootKeys.ts";
import { parseJsonDocument } from "../attestation/encoding/json.ts";
import { RefreshingSource, silentLog, type SourceHealth, type SourceState, type TrustLog } from "./refreshingSource.ts";

/**
 * android-key trust as one value: Google's attestation roots (built in, or a refreshing source replacing them)
 * and its revocation status list (a refreshing source, refreshingSource.ts), the operator's boot-key allow-list
 * and policy, composed into the AndroidTrust the appraisal is handed (appraisal never does I/O); `health()` says
 * what is missing or stale, for /readyz and the log, which says when android-key turns usable or unusable (with
 * the sources' URLs and files; the appraisal's reason, which tenants read, says it without them). See
 * src/trust/README.md.
 */

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
  /**
   * --android-max-shrink: a copy of the roots or the status list that loses more than this share (percent) of the
   * certificates or entries in force is held back and the copy in force stays; 100 accepts any. Default 100.
   */
  maxShrinkPercent?: number;
}

export interface AndroidTrustHealth {
  /** true when android-key appraisal can give Success: roots and status list present and fresh */
  ok: boolean;
  roots: SourceHealth;
  status: SourceHealth;
  /** set when !ok: the same text as current().unavailableReason (no URL or path; the sources' summaries have them) */
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

/** One of the two documents as the composition sees it: a refreshing source, or a fixed stand-in. */
interface Part<T> {
  data(): T | undefined;
  readonly generation: number;
  state(at: Date): SourceState;
  health(at: Date): SourceHealth;
}

/** Shipped with attestd: always present, never stale. */
function builtInRootsPart(roots: AndroidRoots): Part<AndroidRoots> {
  const items = roots.rootsDer.length;
  const keys = roots.pinnedRootSpkiSha256.size;
  return {
    data: () => roots,
    generation: 0,
    state: () => "ok",
    health: () => ({
      state: "ok",
      configured: false,
      source: BUILT_IN_ROOTS_FILE,
      origin: "built-in",
      items,
      keys,
      summary: `Google's roots are built in: ${items} certificates, ${keys} keys`,
    }),
  };
}

/** No --android-status: missing for good, so android-key fails closed and says why (to anyone: no path in it). */
const NO_STATUS = "no Android attestation status list is configured (--android-status)";
const unconfiguredStatus: Part<StatusList> = {
  data: () => undefined,
  generation: 0,
  state: () => "missing",
  health: () => ({
    state: "missing",
    configured: false,
    summary: NO_STATUS,
    reason: NO_STATUS,
    lastError: "not configured",
  }),
};

/**
 * Loads every source once (falling back to the disk cache for a source that fails or does not answer within
 * `startupWaitMs`), logs one line saying whether android-key appraisal is usable and why not, and returns the
 * trust source. Throws only for local configuration: the allow-list file, or a damaged built-in roots file (one
 * clear line); roots and status problems are reported by health() and make android-key fail closed.
 */
export async function loadAndroidTrust(opts: AndroidTrustOptions): Promise<AndroidTrustSource> {
  const now = opts.now ?? (() => new Date());
  const log = opts.log ?? silentLog;
  const startupWaitMs = opts.startupWaitMs ?? 3000;
  const policy = opts.policy ?? {};
  const common = {
    cacheDir: opts.cacheDir,
    maxAgeSeconds: opts.maxAgeSeconds,
    maxAgeSetting: "--android-max-age",
    maxShrinkSetting: "--android-max-shrink",
    now,
    log,
    ...(opts.fetch ? { fetch: opts.fetch } : {}),
    ...(opts.fetchTimeoutMs !== undefined ? { fetchTimeoutMs: opts.fetchTimeoutMs } : {}),
    ...(opts.maxBytes !== undefined ? { maxBytes: opts.maxBytes } : {}),
    ...(opts.maxShrinkPercent !== undefined ? { maxShrinkPercent: opts.maxShrinkPercent } : {}),
  };
  const rootsSource = opts.rootsSource
    ? new RefreshingSource<AndroidRoots>({
        ...common,
        source: opts.rootsSource,
        name: "android roots",
        noun: "the Android attestation roots",
        verb: "are",
        cacheFile: "android-roots.json",
        parse: (body, where) => parseAndroidRoots(body, where),
        measure: (r) => {
          const keys = r.pinnedRootSpkiSha256.size;
          return { items: r.rootsDer.length, keys, text: `${r.rootsDer.length} certificates, ${keys} keys` };
        },
      })
    : undefined;
  const statusSource = opts.statusSource
    ? new RefreshingSource<StatusList>({
        ...common,
        source: opts.statusSource,
        name: "android status",
        noun: "the Android attestation status list",
        verb: "is",
        cacheFile: "android-status.json",
        parse: (body, where) => parseStatusList(body.toString("utf8"), where),
        measure: (s) => ({ items: s.size, text: `${s.size} entries` }),
      })
    : undefined;
  const sources = [rootsSource, statusSource].filter((s) => s !== undefined);

  let memoKey = "";
  let memo: AndroidTrust = emptyAndroidTrust(policy);
  /** whether android-key was usable when last looked at; undefined until the start-up line says it first */
  let lastFresh: boolean | undefined;
  let bootKeys: readonly AllowedBootKey[] = [];
  let bootKeysGeneration = 0;
  let bootKeysError: string | undefined;

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

  let refreshing: Promise<void> | undefined;
  /** Starts one read of each source; `refreshing` covers them all, so refreshes never overlap. */
  function startLoads(withBootKeys: boolean): Promise<void> {
    const all = Promise.all([...sources.map((s) => s.refresh()), withBootKeys ? loadBootKeys(false) : undefined]);
    return (refreshing = all.then(
      () => noteState(),
      () => undefined,
    ).finally(() => {
      refreshing = undefined;
    }));
  }
  const refresh = () => refreshing ?? startLoads(true);

  await loadBootKeys(true);
  const roots: Part<AndroidRoots> = rootsSource ?? builtInRootsPart(await loadBuiltInAndroidRoots());
  const status: Part<StatusList> = statusSource ?? unconfiguredStatus;
  void startLoads(false);
  await Promise.all(sources.map((s) => s.settle(startupWaitMs)));

  function snapshot(at: Date) {
    const r = roots.health(at);
    const s = status.health(at);
    const fresh = r.state === "ok" && s.state === "ok";
    const failing = ([[r, "the Android attestation roots are"], [s, "the Android attestation status list is"]] as const).filter(
      ([h]) => h.state !== "ok",
    );
    // Two sentences for one outage. The appraisal's reason reaches tenants (the verdict, its record, the portal),
    // so it is each source's `reason`, which names no URL, file or directory (a part without one is only named);
    // the operator's, with them, is the summary the log says when android-key turns unusable (logState).
    const reason = fresh ? undefined : failing.map(([h, is]) => h.reason ?? `${is} ${h.state}`).join("; ");
    const operatorReason = fresh ? undefined : failing.map(([h]) => h.summary).join("; ");
    return { r, s, fresh, reason, operatorReason };
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
    else log.warn(fields, `android-key appraisal fails closed: ${snap.operatorReason}`);
  }

  function current(): AndroidTrust {
    const at = now();
    const fresh = roots.state(at) === "ok" && status.state(at) === "ok";
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
      const r = roots.data();
      memo = {
        pinnedRootSpkiSha256: r?.pinnedRootSpkiSha256 ?? new Set(),
        rootsDer: r?.rootsDer ?? [],
        status: status.data() ?? EMPTY_STATUS_LIST,
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
  // from here on each source logs its own refreshes; the start-up line below sums up the first load
  for (const s of sources) s.quiet = false;
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
      for (const s of sources) s.stop();
    },
  };
}
