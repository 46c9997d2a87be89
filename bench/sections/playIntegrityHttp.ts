import path from "node:path";
import { devTls, provisionApiKey, sqliteDeployment } from "../lib/attestd.ts";
import { runFloorHttps, type FloorHttpsContext } from "../lib/floorHttps.ts";
import type { LoadSettings } from "../lib/partA.ts";
import { createPlayFixture, playRequestsFor, registerPlayApp } from "../lib/playIntegrityFixture.ts";
import type { ProfileSummary } from "../lib/profile.ts";
import type { Comparison } from "./http.ts";

/** Issue 23 item 6: attestd's Play Integrity blobs/s ≥ 60 % of the bare baseline doing the same decrypt + verify. */
export const PLAY_HTTP_TARGET = 0.6;

export interface PlayIntegrityHttpSection {
  status: "ok";
  how: { attestd: string; baseline: string; tokens: string; loadGenerator: string };
  settings: LoadSettings;
  blobs: Comparison;
  /** tokensPerRound and buildMs: one entry per round */
  pool: { tokensPerRound: number[]; tokenBytes: number; buildMs: number[] };
  /** what attestd answered (the median round's sample): the verdict must be Yes, or the timing is of a refusal */
  verdict?: string;
  /** CPU profiles of attestd and the floor baseline on fresh tokens, when the target was missed (or with --profile) */
  profiles: ProfileSummary[];
  notes: string[];
}

/**
 * Play Integrity over HTTPS: attestd (SQLite, one process, started as the other HTTPS sections start it) with the
 * demo app registered for its tenant by `attestd play-app add` before it starts, beside the bare baseline, whose
 * Play Integrity route does only the floor's work (bench/lib/playIntegrityFloor.ts). The rounds, profiles and checks
 * are bench/lib/floorHttps.ts's, as section 2b's.
 */
export async function runPlayIntegrityHttpSection(ctx: FloorHttpsContext): Promise<PlayIntegrityHttpSection> {
  const s = ctx.settings;
  const pfx = createPlayFixture();
  const deployment = sqliteDeployment(path.join(ctx.tmp, "attestd-play"), "sqlite, 1 process, play-integrity");
  const tls = await devTls(deployment.dataDir);
  const apiKey = await provisionApiKey(deployment);
  await registerPlayApp(deployment, pfx);
  const run = await runFloorHttps(ctx, {
    name: "play-integrity-https",
    workload: "POST /v2/blobs (play-integrity)",
    unit: "tokens",
    deployment,
    tls,
    apiKey,
    serveArgs: [],
    baselineArgs: ["--play-decryption-key", pfx.keys.decryptionKey, "--play-verification-key", pfx.keys.verificationKey],
    build: (nonces) => playRequestsFor(pfx, nonces),
    // a token costs the bench well under a millisecond (one ES256 signature, one AES wrap): the first pool may be generous
    firstRate: 2000,
    target: PLAY_HTTP_TARGET,
  });
  return {
    status: "ok",
    how: {
      attestd: `child process: ${run.command}; the demo app registered before start: attestd play-app add --tenant bench --package ${pfx.ca.packageName} --cert-digest HEX --decryption-key B64 --verification-key B64 --data-dir DIR`,
      baseline:
        "child process: node bench/baseline/server (compiled) --play-decryption-key B64 --play-verification-key B64: a body starting \"eyJ\" gets only the floor's work (bench/lib/playIntegrityFloor.ts, jose as attestd: compactDecrypt A256KW + A256GCM, compactVerify ES256, requestHash against the nonce), answered with an eleven-field record like attestd's; no auth, no nonce store, no app registry, no rules, no verdict storage",
      tokens: `the simulator's demo app (createPlayDevCa; response keys as playConsoleKeys gives them); per nonce, makePlayIntegrityToken seals a standard request's token (requestHash = the nonce, PLAY_RECOGNIZED, MEETS_DEVICE_INTEGRITY): ES256 JWS inside an A256KW + A256GCM JWE`,
      loadGenerator: `autocannon 8, HTTPS keep-alive, ${s.connections} connections, pipelining ${s.pipelining}, ${s.durationSec} s measured after ${s.warmupSec} s warm-up (15 % of the tokens), ${s.rounds} round(s), median round shown; every token is sent to attestd once (its nonce is single-use), the baseline repeats them`,
    },
    settings: s,
    blobs: run.blobs,
    pool: { tokensPerRound: run.poolPerRound, tokenBytes: run.bodyBytes, buildMs: run.buildMs },
    ...(run.verdict ? { verdict: run.verdict } : {}),
    profiles: run.profiles,
    notes: run.notes,
  };
}
