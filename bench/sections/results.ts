import { mkdirSync } from "node:fs";
import path from "node:path";
import { createLocalJWKSet, jwtVerify } from "jose";
import { encodeVendorBlob } from "../../src/attestation/sim/deviceSim.ts";
import { cryptoRng, systemClock } from "../../src/clock.ts";
import { loadConfig } from "../../src/config.ts";
import type { VerdictDeviceDetail } from "../../src/domain/devices.ts";
import type { EarAlgorithm } from "../../src/domain/signingKeys.ts";
import type { Tenant } from "../../src/domain/tenants.ts";
import type { StoredVerdict } from "../../src/domain/verdicts.ts";
import { createLogger } from "../../src/logging.ts";
import { EarIssuer } from "../../src/results/earIssuer.ts";
import { EarKeyRing } from "../../src/results/signingKeys.ts";
import { openSecrets } from "../../src/secrets/openSecrets.ts";
import { AttestationService } from "../../src/services/attestationService.ts";
import { openStores } from "../../src/store/openStores.ts";
import type { Stores } from "../../src/store/types.ts";
import { openTrust } from "../../src/trust/openTrust.ts";
import { adminQuery, dbUrl, ensureServices } from "../lib/backing.ts";
import { commandCpuSeconds, selfCpuSeconds, systemBusySeconds } from "../lib/cpu.ts";
import { devTls, provisionApiKey, sqliteDeployment, startAttestd } from "../lib/attestd.ts";
import { round } from "../lib/load.ts";
import { attestdBlobs, blobRequestsFor, measureNonces, type LoadSettings, type MeasuredLoad } from "../lib/partA.ts";
import type { VendorFixture } from "../lib/vendorFixture.ts";

/**
 * Issue 14's per-verdict costs, at library level in this process (no HTTP): what signing a verdict as an EAR adds
 * to answering the plain record, and what naming the device (`deviceId`, trust on first use) adds to an appraisal,
 * on SQLite and on PostgreSQL; and the EAR once more over HTTPS against `attestd serve`. Variants take turns in
 * paired rounds (A B C, then B C A, ...) so a slow patch of the shared machine hits all of them; each variant's
 * median round is reported.
 */

/**
 * One measured run: wall time, and the CPU time this process spent (all its threads: SQLite's writer and WAL
 * checkpointer included), per verdict. CPU time is what ranks the variants here: on a shared 2-core machine the
 * wall time of the same run swings several-fold with other people's work, the CPU a verdict costs much less.
 */
export interface Sample {
  wallUs: number;
  cpuUs: number;
  /** CPU of the local PostgreSQL processes per verdict (PostgreSQL only; any client's work, not only ours) */
  backingCpuUs?: number;
}

export interface PinVariant {
  /** median round, µs of wall time per verdict (CONCURRENCY in flight) */
  usPerVerdict: number;
  /** median round, µs of this process's CPU per verdict */
  cpuUsPerVerdict: number;
  /** median round, µs of PostgreSQL's CPU per verdict (PostgreSQL only) */
  backingCpuUsPerVerdict?: number;
  rounds: Sample[];
  verdicts: number;
  /** what the verdicts said: `Yes/first` etc. (a timing of refusals would not be comparable) */
  outcomes: Record<string, number>;
}

export interface PinBackend {
  store: "sqlite" | "postgres";
  plain: PinVariant;
  /** a deviceId never seen: reads no record, writes the record and the pin */
  firstPin: PinVariant;
  /** a pinned deviceId showing the same device: reads the record, compares, writes the history */
  repeat: PinVariant;
  /** median over rounds of (variant ÷ plain) in the same round, on CPU per verdict (ours + PostgreSQL's) */
  ratio: { firstPin: number; repeat: number };
  /** the same on wall time (noisier) */
  wallRatio: { firstPin: number; repeat: number };
  /** CPU µs added per verdict (median variant − median plain, ours + PostgreSQL's) */
  addedCpuUs: { firstPin: number; repeat: number };
}

export interface EarVariant {
  usPerOp: number;
  cpuUsPerOp: number;
  rounds: Sample[];
  calls: number;
  bytes: number;
}

export interface EarResult {
  plain: EarVariant;
  ear: EarVariant;
  /** CPU µs the EAR adds per verdict (ear − plain) */
  addedCpuUs: number;
  /** median over rounds of ear ÷ plain CPU */
  ratio: number;
  /** (a whole SQLite verdict + EAR) ÷ (a whole SQLite verdict + plain record), CPU: what signing costs a verdict */
  perVerdictRatio?: number;
  /** an issued EAR verified against the published JWKS (jose) */
  verified: boolean;
}

/** One paired HTTPS round: the same kind of blob requests, answered as the record or as the EAR. */
export interface EarHttpsRound {
  plain: { rps: number; serverCpuUsPer2xx?: number; requests2xx: number };
  ear: { rps: number; serverCpuUsPer2xx?: number; requests2xx: number };
  /** cores other processes used during the two runs (server and load generator excluded) */
  otherCores: number[];
}

export interface EarHttps {
  command: string;
  /** median over rounds of the EAR run's server CPU per answer ÷ the plain run's */
  cpuRatio?: number;
  /** median over rounds of plain 2xx/s ÷ EAR 2xx/s */
  rpsRatio: number;
  /** medians of the rounds' figures */
  plain: { rps: number; serverCpuUsPer2xx?: number };
  ear: { rps: number; serverCpuUsPer2xx?: number };
  /** an EAR answer looked like a compact JWS (three base64url parts) */
  answeredEar: boolean;
  rounds: EarHttpsRound[];
}

export interface ResultsSection {
  status: "ok";
  how: {
    level: string;
    ear: string;
    pinning: string;
    concurrency: number;
    verdictsPerRound: number;
    rounds: number;
  };
  ear: EarResult;
  /** POST /v2/blobs over HTTPS (attestd serve, SQLite) with and without Accept: application/eat+jwt */
  earHttps?: EarHttps | { status: "error"; message: string };
  pinning: { backends: PinBackend[]; skipped?: string };
  /** cores used by other processes (not this one, not PostgreSQL/Redis) while the section ran */
  otherCores?: number;
  notes: string[];
}

export interface ResultsContext {
  tmp: string;
  fx: VendorFixture;
  quick: boolean;
  log: (line: string) => void;
}

/** verdicts in flight at once, as a server with several connections would have them (group commit batches them) */
const CONCURRENCY = 8;
const DEVICES_PINNED = 16;

/** The trust sources must never wait on the network: android-key is not appraised here. */
const offline: typeof fetch = async () => {
  throw new TypeError("fetch failed (the bench is offline)");
};

interface Backend {
  store: "sqlite" | "postgres";
  attestation: AttestationService;
  issuer: EarIssuer;
  tenant: Tenant;
  close(): Promise<void>;
}

/** The services `attestd serve` builds (src/server.ts), for one store, without the HTTP layer. */
async function openBackend(store: "sqlite" | "postgres", dataDir: string, fx: VendorFixture, databaseUrl?: string): Promise<Backend> {
  mkdirSync(dataDir, { recursive: true });
  const config = loadConfig(
    {
      dataDir,
      store,
      ...(databaseUrl ? { databaseUrl } : {}),
      vendorRoots: fx.rootsFile,
      referenceValues: fx.referenceValuesFile,
      logLevel: "silent",
    },
    {},
  );
  const stores: Stores = await openStores(config, { serving: true });
  try {
    const secrets = await openSecrets(stores.secrets, config, cryptoRng);
    const log = createLogger({ level: "silent" });
    const trust = await openTrust(config, { log, clock: systemClock, serving: false, referenceValues: stores.durable, fetch: offline });
    const keys = await EarKeyRing.open(stores.signingKeys, systemClock, secrets.box, {
      alg: config.earAlg as EarAlgorithm,
      refreshMs: config.earKeyRefresh * 1000,
    });
    const tenant = await stores.durable.createTenant({
      tenantId: "t_bench",
      name: "bench",
      customerId: "1000001",
      kind: "customer",
      createdAt: new Date().toISOString(),
    });
    const attestation = new AttestationService({
      nonces: stores.nonces,
      verdicts: stores.durable,
      nonceVerdicts: stores.nonceVerdicts,
      trust: trust.forTenant,
      clock: systemClock,
      rng: cryptoRng,
      limits: { nonceTtlMs: 3_600_000, maxOutstandingNonces: 100_000_000 },
    });
    return { store, attestation, issuer: new EarIssuer(keys, systemClock), tenant, close: () => stores.close() };
  } catch (e) {
    await stores.close();
    throw e;
  }
}

type VariantName = "plain" | "firstPin" | "repeat";
const VARIANTS: VariantName[] = ["plain", "firstPin", "repeat"];

interface Job {
  nonce: string;
  blob: Buffer;
  deviceId: string | undefined;
}

/** A round's requests, made before the clock starts (nonces issued, blobs signed). */
async function prepare(b: Backend, fx: VendorFixture, v: VariantName, n: number, tag: string): Promise<Job[]> {
  const jobs: Job[] = [];
  for (let i = 0; i < n; i++) {
    const nonce = await b.attestation.issueNonce(b.tenant.tenantId);
    const d = i % DEVICES_PINNED;
    const blob = Buffer.from(encodeVendorBlob({ nonce, leaf: fx.devices[d]!, ca: fx.ca }));
    const deviceId = v === "plain" ? undefined : v === "firstPin" ? `new-${tag}-${i}` : `dev-${d}`;
    jobs.push({ nonce, blob, deviceId });
  }
  return jobs;
}

const BACKING = /^(postgres|redis-server)$/;

/** Runs `fn` (n operations) and measures it per operation; `backing`: also the local PostgreSQL's CPU. */
async function sample(n: number, backing: boolean, fn: () => Promise<unknown>): Promise<Sample> {
  const b0 = backing ? commandCpuSeconds(BACKING) : undefined;
  const c0 = process.cpuUsage();
  const t0 = process.hrtime.bigint();
  await fn();
  const wall = Number(process.hrtime.bigint() - t0) / 1e3;
  const c = process.cpuUsage(c0);
  const b1 = backing ? commandCpuSeconds(BACKING) : undefined;
  return {
    wallUs: round(wall / n, 1),
    cpuUs: round((c.user + c.system) / n, 1),
    ...(b0 !== undefined && b1 !== undefined ? { backingCpuUs: round(((b1 - b0) * 1e6) / n, 1) } : {}),
  };
}

/** Submits the jobs CONCURRENCY at a time, counting what they said. */
async function drive(b: Backend, jobs: Job[], outcomes: Record<string, number>, keep?: StoredVerdict[]): Promise<void> {
  let next = 0;
  const worker = async () => {
    while (next < jobs.length) {
      const j = jobs[next++]!;
      const v = await b.attestation.submitBlob(b.tenant, j.nonce, j.blob, { deviceId: j.deviceId });
      const device = (v.detail as { device?: VerdictDeviceDetail }).device;
      const key = `${v.record.verdict}/${device?.pin ?? "unnamed"}`;
      outcomes[key] = (outcomes[key] ?? 0) + 1;
      if (keep && keep.length < 64) keep.push(v);
    }
  };
  await Promise.all(Array.from({ length: CONCURRENCY }, worker));
}

const median = (xs: readonly number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
/** a run's CPU per verdict, this process's and PostgreSQL's */
const cpuOf = (x: Sample) => x.cpuUs + (x.backingCpuUs ?? 0);

async function measurePinning(b: Backend, fx: VendorFixture, n: number, rounds: number, keep: StoredVerdict[]): Promise<PinBackend> {
  const backing = b.store === "postgres";
  // the devices the `repeat` variant names are pinned first (one Yes each), and every path is warmed up
  for (const v of VARIANTS) await drive(b, await prepare(b, fx, v, Math.max(DEVICES_PINNED, Math.round(n / 2)), `warm-${v}`), {});
  const per: Record<VariantName, { rounds: Sample[]; outcomes: Record<string, number>; verdicts: number }> = {
    plain: { rounds: [], outcomes: {}, verdicts: 0 },
    firstPin: { rounds: [], outcomes: {}, verdicts: 0 },
    repeat: { rounds: [], outcomes: {}, verdicts: 0 },
  };
  for (let r = 0; r < rounds; r++) {
    // each round's requests are made first (untimed), then the variants run back to back, the order rotating
    const order = VARIANTS.map((_, i) => VARIANTS[(i + r) % VARIANTS.length]!);
    const jobs = Object.fromEntries(await Promise.all(order.map(async (v) => [v, await prepare(b, fx, v, n, `r${r}`)] as const)));
    for (const v of order) {
      per[v].rounds.push(await sample(n, backing, () => drive(b, jobs[v]!, per[v].outcomes, v === "repeat" ? keep : undefined)));
      per[v].verdicts += n;
    }
  }
  const variant = (v: VariantName): PinVariant => {
    const xs = per[v].rounds;
    const backingMedian = xs.every((x) => x.backingCpuUs !== undefined) ? { backingCpuUsPerVerdict: median(xs.map((x) => x.backingCpuUs!)) } : {};
    return {
      usPerVerdict: median(xs.map((x) => x.wallUs)),
      cpuUsPerVerdict: median(xs.map((x) => x.cpuUs)),
      ...backingMedian,
      rounds: xs,
      verdicts: per[v].verdicts,
      outcomes: per[v].outcomes,
    };
  };
  const ratio = (v: VariantName, of: (x: Sample) => number) => round(median(per[v].rounds.map((x, i) => of(x) / of(per.plain.rounds[i]!))), 3);
  const total = (x: PinVariant) => x.cpuUsPerVerdict + (x.backingCpuUsPerVerdict ?? 0);
  const plain = variant("plain");
  const firstPin = variant("firstPin");
  const repeat = variant("repeat");
  return {
    store: b.store,
    plain,
    firstPin,
    repeat,
    ratio: { firstPin: ratio("firstPin", cpuOf), repeat: ratio("repeat", cpuOf) },
    wallRatio: { firstPin: ratio("firstPin", (x) => x.wallUs), repeat: ratio("repeat", (x) => x.wallUs) },
    addedCpuUs: { firstPin: round(total(firstPin) - total(plain), 1), repeat: round(total(repeat) - total(plain), 1) },
  };
}

/**
 * The EAR of stored verdicts against the plain record's JSON, in paired rounds of `n` calls each (the order
 * alternating); one EAR verified against the published JWKS.
 */
async function measureEar(b: Backend, verdicts: StoredVerdict[], n: number, rounds: number): Promise<EarResult> {
  let i = 0;
  const nextVerdict = () => verdicts[i++ % verdicts.length]!;
  const ops = {
    // what POST /v2/blobs answers by default: the eleven-field record, serialised
    plain: async () => {
      for (let k = 0; k < n; k++) JSON.stringify({ ...nextVerdict().record });
    },
    // what it answers with Accept: application/eat+jwt: the claims, ES256-signed (jose)
    ear: async () => {
      for (let k = 0; k < n; k++) await b.issuer.ear(nextVerdict());
    },
  };
  await ops.plain();
  await ops.ear();
  const per = { plain: [] as Sample[], ear: [] as Sample[] };
  for (let r = 0; r < rounds; r++) {
    for (const name of r % 2 ? (["ear", "plain"] as const) : (["plain", "ear"] as const)) per[name].push(await sample(n, false, ops[name]));
  }
  const token = await b.issuer.ear(verdicts[0]!);
  const { payload } = await jwtVerify(token, createLocalJWKSet(b.issuer.jwks() as Parameters<typeof createLocalJWKSet>[0]));
  const variant = (name: "plain" | "ear", bytes: number): EarVariant => ({
    usPerOp: median(per[name].map((x) => x.wallUs)),
    cpuUsPerOp: median(per[name].map((x) => x.cpuUs)),
    rounds: per[name],
    calls: n * rounds,
    bytes,
  });
  const plain = variant("plain", JSON.stringify({ ...verdicts[0]!.record }).length);
  const ear = variant("ear", token.length);
  return {
    plain,
    ear,
    addedCpuUs: round(ear.cpuUsPerOp - plain.cpuUsPerOp, 1),
    ratio: round(median(per.ear.map((x, k) => x.cpuUs / Math.max(0.01, per.plain[k]!.cpuUs))), 1),
    verified: typeof payload["eat_profile"] === "string",
  };
}

const EAR_ACCEPT = { accept: "application/eat+jwt" };

/**
 * The EAR over HTTPS: `attestd serve` (SQLite, one process, the HTTP section's flags) takes paired rounds of blob
 * posts, half the round's nonces answered as the record and half with `Accept: application/eat+jwt`, the order
 * alternating. Ranked on the server's CPU per answer (its process tree, from /proc), which the load generator and
 * other work on the machine do not move much.
 */
async function measureEarHttps(ctx: ResultsContext, s: LoadSettings): Promise<EarHttps> {
  const dataDir = path.join(ctx.tmp, "results-https");
  const d = sqliteDeployment(dataDir, "sqlite, EAR");
  const tls = await devTls(dataDir);
  const apiKey = await provisionApiKey(d);
  const { server, command } = await startAttestd(d, ctx.fx, tls);
  const rounds: EarHttpsRound[] = [];
  let answeredEar = true;
  const figures = (m: MeasuredLoad) => ({
    rps: m.rps,
    requests2xx: m.requests2xx,
    ...(m.rpsPerServerCore ? { serverCpuUsPer2xx: round(1e6 / m.rpsPerServerCore, 1) } : {}),
  });
  try {
    for (let r = 0; r < s.rounds; r++) {
      const issued: string[] = [];
      // the nonces are issued by the server under test, as in the HTTP section (their own load run, not measured here)
      await measureNonces(server.origin, server.pid, apiKey, s, issued);
      const { requests } = blobRequestsFor(ctx.fx, issued);
      const half = Math.floor(requests.length / 2);
      const pools = { plain: requests.slice(0, half), ear: requests.slice(half) };
      const runs: Partial<Record<"plain" | "ear", MeasuredLoad>> = {};
      for (const v of r % 2 ? (["ear", "plain"] as const) : (["plain", "ear"] as const)) {
        runs[v] = await attestdBlobs(server.origin, server.pid, apiKey, pools[v], s, undefined, v === "ear" ? EAR_ACCEPT : {});
      }
      if (!/^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$/.test(runs.ear!.sample ?? "")) answeredEar = false;
      rounds.push({
        plain: figures(runs.plain!),
        ear: figures(runs.ear!),
        otherCores: [runs.plain!.otherCores, runs.ear!.otherCores].filter((x): x is number => x !== undefined),
      });
      ctx.log(`results: HTTPS round ${r + 1}: plain ${Math.round(runs.plain!.rps)}/s, EAR ${Math.round(runs.ear!.rps)}/s`);
    }
  } finally {
    await server.stop();
  }
  const cpu = rounds.every((x) => x.plain.serverCpuUsPer2xx && x.ear.serverCpuUsPer2xx);
  return {
    command,
    ...(cpu ? { cpuRatio: round(median(rounds.map((x) => x.ear.serverCpuUsPer2xx! / x.plain.serverCpuUsPer2xx!)), 3) } : {}),
    rpsRatio: round(median(rounds.map((x) => x.plain.rps / Math.max(1, x.ear.rps))), 3),
    plain: { rps: median(rounds.map((x) => x.plain.rps)), ...(cpu ? { serverCpuUsPer2xx: median(rounds.map((x) => x.plain.serverCpuUsPer2xx!)) } : {}) },
    ear: { rps: median(rounds.map((x) => x.ear.rps)), ...(cpu ? { serverCpuUsPer2xx: median(rounds.map((x) => x.ear.serverCpuUsPer2xx!)) } : {}) },
    answeredEar,
    rounds,
  };
}

/** Starts a window; its end answers the cores other processes (not this one, not PostgreSQL/Redis) used in it. */
function otherWorkWindow(): () => number | undefined {
  const self0 = selfCpuSeconds();
  const sys0 = systemBusySeconds();
  const back0 = commandCpuSeconds(BACKING);
  const t0 = performance.now();
  return () => {
    const wall = (performance.now() - t0) / 1000;
    const sys1 = systemBusySeconds();
    const back1 = commandCpuSeconds(BACKING);
    if (sys0 === undefined || sys1 === undefined || wall <= 0) return undefined;
    const backing = back0 !== undefined && back1 !== undefined ? back1 - back0 : 0;
    return round(Math.max(0, (sys1 - sys0 - (selfCpuSeconds() - self0) - backing) / wall), 2);
  };
}

export async function runResultsSection(ctx: ResultsContext): Promise<ResultsSection> {
  const { fx, quick, log } = ctx;
  const n = quick ? 40 : 150;
  const rounds = quick ? 1 : 15;
  const notes: string[] = [];
  // other processes' CPU during the library-level parts (the HTTPS runs record their own, server excluded)
  const others: number[] = [];
  const watch = async <T>(fn: () => Promise<T>): Promise<T> => {
    const w = otherWorkWindow();
    try {
      return await fn();
    } finally {
      const x = w();
      if (x !== undefined) others.push(x);
    }
  };

  const backends: PinBackend[] = [];
  let ear: EarResult | undefined;
  const keep: StoredVerdict[] = [];

  log(`results: SQLite, ${rounds} round(s) × ${n} verdicts per variant (plain, first pin, pinned device)`);
  const sqlite = await openBackend("sqlite", path.join(ctx.tmp, "results-sqlite"), fx);
  try {
    backends.push(await watch(() => measurePinning(sqlite, fx, n, rounds, keep)));
    log("results: EAR signing vs the plain record");
    ear = await watch(() => measureEar(sqlite, keep, quick ? 50 : 300, quick ? 1 : 9));
  } finally {
    await sqlite.close();
  }

  log("results: EAR over HTTPS (attestd serve, SQLite): blobs with and without Accept: application/eat+jwt");
  const https: LoadSettings = quick
    ? { durationSec: 0.7, warmupSec: 0.2, connections: 20, pipelining: 1, rounds: 1 }
    : { durationSec: 2, warmupSec: 0.5, connections: 20, pipelining: 1, rounds: 5 };
  const earHttps = await measureEarHttps(ctx, https).catch((e: unknown) => ({ status: "error" as const, message: String((e as Error)?.message ?? e) }));

  let skipped: string | undefined = await ensureServices(log);
  if (!skipped) {
    const db = `attestd_bench_results_${process.pid}`;
    await adminQuery(`DROP DATABASE IF EXISTS ${db} WITH (FORCE)`);
    await adminQuery(`CREATE DATABASE ${db}`);
    try {
      log(`results: PostgreSQL (nonces in PostgreSQL, no Redis), same rounds`);
      const pg = await openBackend("postgres", path.join(ctx.tmp, "results-pg"), fx, dbUrl(db));
      try {
        backends.push(await watch(() => measurePinning(pg, fx, n, rounds, [])));
      } finally {
        await pg.close();
      }
    } finally {
      await adminQuery(`DROP DATABASE IF EXISTS ${db} WITH (FORCE)`).catch(() => undefined);
    }
  } else {
    notes.push(`PostgreSQL skipped: ${skipped}`);
  }

  const sqliteRow = backends[0]!;
  ear.perVerdictRatio = round((sqliteRow.plain.cpuUsPerVerdict + ear.ear.cpuUsPerOp) / (sqliteRow.plain.cpuUsPerVerdict + ear.plain.cpuUsPerOp), 3);

  if (!("status" in earHttps)) for (const r of earHttps.rounds) others.push(...r.otherCores);
  const otherCores = others.length ? Math.max(...others) : undefined;
  for (const b of backends) {
    const expect: Record<VariantName, string> = { plain: "Yes/unnamed", firstPin: "Yes/first", repeat: "Yes/matched" };
    for (const v of VARIANTS) {
      const other = Object.keys(b[v].outcomes).filter((k) => k !== expect[v]);
      if (other.length) notes.push(`${b.store} ${v}: unexpected outcomes ${other.map((k) => `${k} ×${b[v].outcomes[k]}`).join(", ")}`);
    }
  }
  if (quick) notes.push("--quick: one short round; the figures are indicative only");

  return {
    status: "ok",
    how: {
      level:
        "library, in the bench process: AttestationService.submitBlob and EarIssuer.ear as src/server.ts builds them, no HTTP; then the EAR over HTTPS against attestd serve (earHttps.command)",
      ear:
        "paired rounds (order alternating) over verdicts stored by the pinning run: JSON.stringify of the eleven-field record (the default answer) vs EarIssuer.ear (claims + ES256 JWS with jose, the Accept: application/eat+jwt answer); CPU and wall µs per call",
      pinning:
        `vendor blobs of ${DEVICES_PINNED} dev-CA devices, nonce issued and blob signed before the clock starts; ${CONCURRENCY} submitBlob calls in flight; variants: no deviceId; a fresh deviceId per verdict (first pin); the device's own pinned deviceId (record read, compared, history written)`,
      concurrency: CONCURRENCY,
      verdictsPerRound: n,
      rounds,
    },
    ear,
    earHttps,
    pinning: { backends, ...(skipped ? { skipped } : {}) },
    ...(otherCores !== undefined ? { otherCores } : {}),
    notes,
  };
}
