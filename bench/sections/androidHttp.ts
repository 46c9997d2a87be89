import path from "node:path";
import { createAndroidFixture, androidRequestsFor, type AndroidFixture } from "../lib/androidFixture.ts";
import { devTls, provisionApiKey, sqliteDeployment } from "../lib/attestd.ts";
import { runFloorHttps, type FloorHttpsContext } from "../lib/floorHttps.ts";
import type { LoadSettings } from "../lib/partA.ts";
import type { ProfileSummary } from "../lib/profile.ts";
import type { Comparison } from "./http.ts";

/** Issue 15 item 1: attestd's android-key blobs/s ≥ 60 % of the bare baseline doing the same unavoidable crypto. */
export const ANDROID_HTTP_TARGET = 0.6;

export interface AndroidHttpSection {
  status: "ok";
  how: { attestd: string; baseline: string; chains: string; loadGenerator: string };
  settings: LoadSettings;
  blobs: Comparison;
  /** chainsPerRound and buildMs: one entry per round */
  pool: { devices: number; chainsPerRound: number[]; chainBytes: number; certificates: number; buildMs: number[] };
  /** what attestd answered (the median round's sample): the verdict must be Yes, or the timing is of a refusal */
  verdict?: string;
  /**
   * CPU profiles (node --cpu-prof) of attestd and of the floor baseline over one more run of fresh chains, when the
   * target was missed (or with --profile): where each request's time goes
   */
  profiles: ProfileSummary[];
  notes: string[];
}

export type AndroidHttpContext = FloorHttpsContext;

/**
 * android-key over HTTPS: attestd (SQLite, one process, the demo Android PKI as its --android-roots and
 * --android-status) beside the bare baseline, whose android-key route does only the floor's work
 * (bench/lib/androidFloor.ts). The rounds, profiles and checks are bench/lib/floorHttps.ts's.
 */
export async function runAndroidHttpSection(ctx: AndroidHttpContext): Promise<AndroidHttpSection> {
  const s = ctx.settings;
  const devices = 16;
  const afx: AndroidFixture = await createAndroidFixture(ctx.tmp, devices);
  const deployment = sqliteDeployment(path.join(ctx.tmp, "attestd-android"), "sqlite, 1 process, android-key");
  const tls = await devTls(deployment.dataDir);
  const apiKey = await provisionApiKey(deployment);
  const run = await runFloorHttps(ctx, {
    name: "android-https",
    workload: "POST /v2/blobs (android-key)",
    unit: "chains",
    deployment,
    tls,
    apiKey,
    // --nonce-ttl: on a loaded machine making a round's chains can take minutes, longer than the default 300 s
    serveArgs: ["--android-roots", afx.rootsFile, "--android-status", afx.statusFile, "--nonce-ttl", "3600"],
    baselineArgs: ["--android-status", afx.statusFile],
    build: (nonces) => androidRequestsFor(afx, nonces),
    // making a chain costs the bench ~5-50 ms: start from a modest pool
    firstRate: 600,
    target: ANDROID_HTTP_TARGET,
  });
  return {
    status: "ok",
    how: {
      attestd: `child process: ${run.command}`,
      baseline:
        "child process: node bench/baseline/server (compiled) --android-status FILE: a body starting 0x30 gets only the floor's work (bench/lib/androidFloor.ts: split, the leaf's signature with its issuer's key kept by DER bytes, the challenge against the nonce, the issuers' serials in the status list); no auth, no store, no chain rules",
      chains: `attestd dev-ca --android's PKI (EC P-384 root, Droid CA2), ${devices} RKP TEE devices (each its own EC P-256 device CA); per nonce, the simulator certifies the device's key afresh with a KeyDescription for that nonce: leaf, device CA, Droid CA2, root, DER end to end`,
      loadGenerator: `autocannon 8, HTTPS keep-alive, ${s.connections} connections, pipelining ${s.pipelining}, ${s.durationSec} s measured after ${s.warmupSec} s warm-up (15 % of the chains), ${s.rounds} round(s), median round shown; every chain is sent to attestd once (its nonce is single-use), the baseline repeats them`,
    },
    settings: s,
    blobs: run.blobs,
    pool: { devices, chainsPerRound: run.poolPerRound, chainBytes: run.bodyBytes, certificates: 4, buildMs: run.buildMs },
    ...(run.verdict ? { verdict: run.verdict } : {}),
    profiles: run.profiles,
    notes: run.notes,
  };
}
