import { createHash, generateKeyPairSync } from "node:crypto";
import { writeFileSync } from "node:fs";
import path from "node:path";
import { toPem } from "../../src/attestation/encoding/pem.ts";
import { DEMO_APP_ID, makeAppAttestAssertion, makeAppAttestAttestation, makeAppAttestCa, type AppAttestCa, type SimAppAttestKey } from "../../src/attestation/sim/appAttest.ts";
import { sqliteFile } from "../../src/store/openStores.ts";
import { SqliteStore } from "../../src/store/sqlite/sqliteStore.ts";
import { devTls, provisionApiKey, sqliteDeployment } from "../lib/attestd.ts";
import { runFloorHttps, type FloorHttpsContext } from "../lib/floorHttps.ts";
import type { LoadRequest } from "../lib/load.ts";
import type { LoadSettings } from "../lib/partA.ts";
import { attestdCli } from "../lib/processes.ts";
import type { ProfileSummary } from "../lib/profile.ts";
import type { Comparison } from "./http.ts";

/** Issue 25: attestd's App Attest attestations/s ≥ 60 % of the bare baseline doing the same chain verify + nonce. */
export const APP_ATTEST_HTTP_TARGET = 0.6;

export interface AppAttestHttpSection {
  status: "ok";
  how: { attestd: string; baseline: string; attestations: string; loadGenerator: string };
  settings: LoadSettings;
  blobs: Comparison;
  pool: { attestationsPerRound: number[]; attestationBytes: number; buildMs: number[] };
  verdict?: string;
  profiles: ProfileSummary[];
  notes: string[];
}

/** One attestation object per nonce, made afresh (a new P-256 key and credential certificate each), as a device makes it. */
async function attestationsFor(ca: AppAttestCa, nonces: readonly string[]): Promise<{ requests: LoadRequest[]; buildMs: number }> {
  const t0 = performance.now();
  const requests: LoadRequest[] = [];
  const BATCH = 32;
  for (let from = 0; from < nonces.length; from += BATCH) {
    const batch = nonces.slice(from, from + BATCH).map(async (nonce) => ({
      path: `/v2/blobs?nonce=${nonce}`,
      body: Buffer.from((await makeAppAttestAttestation(ca, { nonce })).blob),
    }));
    requests.push(...(await Promise.all(batch)));
  }
  return { requests, buildMs: Math.round(performance.now() - t0) };
}

/**
 * App Attest attestations over HTTPS (issue 25): attestd (SQLite, one process, as sections 2b and 2c start it) with
 * the demo App Attestation root trusted (`--app-attest-roots`) and the demo app registered for its tenant by
 * `attestd ios-app add` before it starts, beside the bare baseline, whose App Attest route does only the floor's work
 * (bench/lib/appAttestFloor.ts). Every Yes makes attestd store a new key with its verdict. The rounds, profiles and
 * checks are bench/lib/floorHttps.ts's.
 */
export async function runAppAttestHttpSection(ctx: FloorHttpsContext): Promise<AppAttestHttpSection> {
  const s = ctx.settings;
  const deployment = sqliteDeployment(path.join(ctx.tmp, "attestd-app-attest"), "sqlite, 1 process, app-attest");
  const tls = await devTls(deployment.dataDir);
  const apiKey = await provisionApiKey(deployment);
  const ca = await makeAppAttestCa();
  const rootFile = path.join(ctx.tmp, "app-attest-root.pem");
  writeFileSync(rootFile, toPem(ca.rootDer, "CERTIFICATE"));
  await attestdCli(["ios-app", "add", "--tenant", "bench", "--app-id", DEMO_APP_ID, "--environment", "both", ...deployment.storeArgs, "--log-level", "warn"]);
  const run = await runFloorHttps(ctx, {
    name: "app-attest-https",
    workload: "POST /v2/blobs (app-attest attestation)",
    unit: "attestations",
    deployment,
    tls,
    apiKey,
    serveArgs: ["--app-attest-roots", rootFile],
    baselineArgs: ["--app-attest-root", rootFile],
    build: (nonces) => attestationsFor(ca, nonces),
    // making an attestation costs the bench ~10–40 ms (a P-256 key, a P-384-signed certificate): a modest first pool
    firstRate: 150,
    target: APP_ATTEST_HTTP_TARGET,
  });
  return {
    status: "ok",
    how: {
      attestd: `child process: ${run.command}; the demo app registered before start: attestd ios-app add --tenant bench --app-id ${DEMO_APP_ID} --environment both --data-dir DIR`,
      baseline:
        "child process: node bench/baseline/server (compiled) --app-attest-root PEM: a body starting 0xa3 gets only the floor's work (bench/lib/appAttestFloor.ts: cbor2 decode, the credential certificate and intermediate parsed and their ECDSA signatures verified up to the root, the nonce hash found in the credential certificate, the key id against the credential id), answered with an eleven-field record like attestd's; no strict CBOR, dates, RP ID, counter or AAGUID rules, no app registry, no key or verdict storage",
      attestations: "the simulator's demo App Attestation CA (makeAppAttestCa: P-384 root and intermediate); per nonce, makeAppAttestAttestation makes a new P-256 key, its credential certificate with the nonce extension, and the CBOR attestation object (production AAGUID, counter 0, a placeholder receipt: receipts are not judged under --app-attest-roots)",
      loadGenerator: `autocannon 8, HTTPS keep-alive, ${s.connections} connections, pipelining ${s.pipelining}, ${s.durationSec} s measured after ${s.warmupSec} s warm-up (15 % of the attestations), ${s.rounds} round(s), median round shown; every attestation is sent to attestd once (its nonce is single-use, its key id is attested once), the baseline repeats them`,
    },
    settings: s,
    blobs: run.blobs,
    pool: { attestationsPerRound: run.poolPerRound, attestationBytes: run.bodyBytes, buildMs: run.buildMs },
    ...(run.verdict ? { verdict: run.verdict } : {}),
    profiles: run.profiles,
    notes: run.notes,
  };
}

/** keys remembered for the assertion workload: a key recurs every KEYS requests, far beyond the 20 in flight */
const ASSERTION_KEYS = 2000;

/**
 * App Attest assertions over HTTPS (issue 25): ASSERTION_KEYS keys remembered for the bench's tenant in attestd's
 * store before it starts (as Yes attestations would have left them: `applyAppAttestEffect`), the same keys given to
 * the baseline (`--app-attest-keys`); per nonce an assertion by the next key with its next counter, so every
 * assertion is Yes for attestd (its counter is above the stored one). The baseline repeats them: its counter check
 * then answers No for a repeat, with the same work done.
 */
export async function runAppAttestAssertionHttpSection(ctx: FloorHttpsContext): Promise<AppAttestHttpSection> {
  const s = ctx.settings;
  const deployment = sqliteDeployment(path.join(ctx.tmp, "attestd-app-attest-assertions"), "sqlite, 1 process, app-attest assertions");
  const tls = await devTls(deployment.dataDir);
  const apiKey = await provisionApiKey(deployment);
  await attestdCli(["ios-app", "add", "--tenant", "bench", "--app-id", DEMO_APP_ID, "--environment", "both", ...deployment.storeArgs, "--log-level", "warn"]);
  const keys: SimAppAttestKey[] = [];
  const points: Record<string, string> = {};
  const store = new SqliteStore({ file: sqliteFile(deployment.dataDir) });
  try {
    const tenant = await store.getTenantByName("bench");
    if (!tenant) throw new Error("the bench tenant is missing");
    const at = new Date().toISOString();
    for (let i = 0; i < ASSERTION_KEYS; i++) {
      const { privateKey, publicKey } = generateKeyPairSync("ec", { namedCurve: "P-256" });
      const jwk = publicKey.export({ format: "jwk" });
      const point = Buffer.concat([Buffer.from([4]), Buffer.from(jwk.x!, "base64url"), Buffer.from(jwk.y!, "base64url")]);
      const keyId = createHash("sha256").update(point).digest("base64");
      keys.push({ keyId, appId: DEMO_APP_ID, privateKeyPem: privateKey.export({ type: "pkcs8", format: "pem" }).toString(), counter: 0 });
      points[keyId] = point.toString("base64");
      await store.applyAppAttestEffect({
        kind: "attested",
        key: {
          tenantId: tenant.tenantId, keyId, appId: DEMO_APP_ID, publicKey: point.toString("base64"), counter: 0, environment: "production", receipt: "",
          attestedAt: at, lastAssertedAt: null, revokedAt: null, riskMetric: null, riskMetricAt: null, lastRefreshResult: null, lastRefreshReason: null, lastRefreshAt: null, refreshDueAt: null,
        },
      });
    }
  } finally {
    await store.close();
  }
  const keysFile = path.join(ctx.tmp, "app-attest-keys.json");
  writeFileSync(keysFile, JSON.stringify(points));
  let next = 0;
  const build = async (nonces: readonly string[]) => {
    const t0 = performance.now();
    const requests: LoadRequest[] = nonces.map((nonce) => {
      const i = next++ % keys.length;
      const a = makeAppAttestAssertion(keys[i]!, { nonce });
      keys[i] = a.key;
      return { path: `/v2/blobs?nonce=${nonce}`, body: Buffer.from(a.body) };
    });
    return { requests, buildMs: Math.round(performance.now() - t0) };
  };
  const run = await runFloorHttps(ctx, {
    name: "app-attest-assertion-https",
    workload: "POST /v2/blobs (app-attest assertion)",
    unit: "assertions",
    deployment,
    tls,
    apiKey,
    serveArgs: [],
    baselineArgs: ["--app-attest-keys", keysFile],
    build,
    // above what attestd serves (~2 900/s on the bench's 2-core machine): a first pool sized for less ran out within
    // the first round (4 000 assertions; that round measured 1 692/s run after run), and an assertion costs the
    // bench ~0.13 ms to make
    firstRate: 3500,
    target: APP_ATTEST_HTTP_TARGET,
  });
  return {
    status: "ok",
    how: {
      attestd: `child process: ${run.command}; the demo app registered before start (attestd ios-app add), and ${ASSERTION_KEYS} keys remembered for the tenant in its store (applyAppAttestEffect, as Yes attestations leave them)`,
      baseline:
        "child process: node bench/baseline/server (compiled) --app-attest-keys FILE: a JSON body with \"assertion\" gets only the floor's work (bench/lib/appAttestFloor.ts: JSON and CBOR read, ECDSA P-256 verify with the key of its key id (imported once), the counter compared with and stored in a Map), answered with an eleven-field record; no strict parsing, no RP ID rule, no key store read, no verdict storage",
      attestations: `per nonce, makeAppAttestAssertion by the next of ${ASSERTION_KEYS} keys with its next counter (one ECDSA P-256 signature; the JSON body as the app posts it)`,
      loadGenerator: `autocannon 8, HTTPS keep-alive, ${s.connections} connections, pipelining ${s.pipelining}, ${s.durationSec} s measured after ${s.warmupSec} s warm-up, ${s.rounds} round(s), median round shown; every assertion is sent to attestd once, the baseline repeats them`,
    },
    settings: s,
    blobs: run.blobs,
    pool: { attestationsPerRound: run.poolPerRound, attestationBytes: run.bodyBytes, buildMs: run.buildMs },
    ...(run.verdict ? { verdict: run.verdict } : {}),
    profiles: run.profiles,
    notes: run.notes,
  };
}
