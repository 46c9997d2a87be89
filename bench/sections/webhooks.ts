import { createServer, type Server as HttpServer } from "node:http";
import type { AddressInfo } from "node:net";
import path from "node:path";
import { devTls, provisionApiKey, sqliteDeployment, startAttestd, type Deployment } from "../lib/attestd.ts";
import { round } from "../lib/load.ts";
import { measureAttestd, type LoadSettings, type MeasuredLoad } from "../lib/partA.ts";
import { attestdCli } from "../lib/processes.ts";
import type { VendorFixture } from "../lib/vendorFixture.ts";

/**
 * Issue 26 item 1: what signed webhooks cost per verdict. Two `attestd serve` processes from one build, alike but
 * for their tenant's webhooks: "none" (no endpoint: a verdict costs one cache lookup) and "subscribed" (one endpoint
 * for every `verdict.stored`, on a receiver in this process that answers 200 at once: every verdict writes an outbox
 * row in its transaction, and the server's worker signs and POSTs it). They take turns on the Part A workloads in
 * paired rounds; the blobs' median round is reported as 2xx/s and as server CPU µs per verdict, whose difference is
 * what a subscribed endpoint costs per verdict, its delivery included (the worker runs in the same process).
 */

export interface WebhookWorkload {
  none: MeasuredLoad;
  subscribed: MeasuredLoad;
  cpuUsPerVerdict: { none: number; subscribed: number; added: number };
  throughputRatio: number;
  rounds: { noneRps: number; subscribedRps: number; noneCpuUs: number; subscribedCpuUs: number }[];
}

export interface WebhooksSection {
  status: "ok";
  how: { servers: string; receiver: string; loadGenerator: string };
  settings: LoadSettings;
  blobs: WebhookWorkload;
  /** deliveries the receiver got from the "subscribed" server over the whole section */
  received: number;
  otherCores: number;
  notes: string[];
}

async function startReceiver(): Promise<{ url: string; count: () => number; close(): Promise<void> }> {
  let n = 0;
  const server: HttpServer = createServer((req, res) => {
    req.resume();
    req.on("end", () => {
      n++;
      res.writeHead(204).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`,
    count: () => n,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

const cpuUs = (m: MeasuredLoad) => (m.rpsPerServerCore ? 1e6 / m.rpsPerServerCore : NaN);
const ALLOW = ["--webhook-allow-private", "--webhook-allow-http"];

async function subscribe(d: Deployment, url: string): Promise<void> {
  await attestdCli(["webhook", "add", "--tenant", "bench", "--url", url, "--events", "verdict.stored", ...ALLOW, ...d.storeArgs, "--log-level", "warn"]);
}

export async function runWebhooksSection(ctx: { tmp: string; fx: VendorFixture; settings: LoadSettings; log: (line: string) => void }): Promise<WebhooksSection> {
  const s = ctx.settings;
  const receiver = await startReceiver();
  const none = sqliteDeployment(path.join(ctx.tmp, "attestd-webhooks-none"), "sqlite, 1 process, no webhook endpoint");
  const sub = sqliteDeployment(path.join(ctx.tmp, "attestd-webhooks-subscribed"), "sqlite, 1 process, one endpoint for every verdict");
  const noneTls = await devTls(none.dataDir);
  const subTls = await devTls(sub.dataDir);
  const noneKey = await provisionApiKey(none);
  const subKey = await provisionApiKey(sub);
  await subscribe(sub, receiver.url);
  const noneServer = await startAttestd(none, ctx.fx, noneTls, { extraArgs: ALLOW });
  const subServer = await startAttestd(sub, ctx.fx, subTls, { extraArgs: [...ALLOW, "--webhook-poll-ms", "100"] });
  const blobs: { none: MeasuredLoad; subscribed: MeasuredLoad }[] = [];
  try {
    for (let i = 0; i < s.rounds; i++) {
      const order = i % 2 === 0 ? (["none", "subscribed"] as const) : (["subscribed", "none"] as const);
      const r: Partial<Record<"none" | "subscribed", MeasuredLoad>> = {};
      for (const side of order) {
        const server = side === "none" ? noneServer.server : subServer.server;
        r[side] = (await measureAttestd(server.origin, server.pid, side === "none" ? noneKey : subKey, ctx.fx, s)).blobs;
      }
      blobs.push({ none: r.none!, subscribed: r.subscribed! });
      ctx.log(
        `webhooks round ${i + 1}/${s.rounds}: blobs ${Math.round(r.none!.rps)} → ${Math.round(r.subscribed!.rps)}/s (${round(cpuUs(r.none!), 0)} → ${round(cpuUs(r.subscribed!), 0)} CPU µs/verdict), ${receiver.count()} delivered so far`,
      );
    }
    // let the worker finish the backlog, so `received` counts what the load made
    await new Promise((r) => setTimeout(r, 3_000));
  } finally {
    await noneServer.server.stop();
    await subServer.server.stop();
    await receiver.close();
  }
  const rounds = blobs.map(({ none: a, subscribed: b }) => ({ noneRps: round(a.rps, 1), subscribedRps: round(b.rps, 1), noneCpuUs: round(cpuUs(a), 1), subscribedCpuUs: round(cpuUs(b), 1) }));
  const orderIdx = blobs.map((_, i) => i).sort((a, b) => rounds[a]!.subscribedCpuUs - rounds[a]!.noneCpuUs - (rounds[b]!.subscribedCpuUs - rounds[b]!.noneCpuUs));
  const mid = orderIdx[Math.floor(orderIdx.length / 2)]!;
  const m = rounds[mid]!;
  const all = blobs.flatMap((p) => [p.none, p.subscribed]);
  const otherCores = Math.max(...all.map((x) => x.otherCores ?? 0));
  const notes: string[] = [];
  if (receiver.count() === 0) notes.push("the receiver got no delivery: the subscribed server did not deliver");
  if (otherCores > 0.25) notes.push(`other processes used up to ${otherCores.toFixed(2)} cores during the runs: the machine was busy`);
  return {
    status: "ok",
    how: {
      servers: `two child processes, ${noneServer.command} with --webhook-allow-private --webhook-allow-http, the tenant of one with no endpoint, of the other with one endpoint for every verdict.stored (--webhook-poll-ms 100)`,
      receiver: "an HTTP server in the bench process answering 204 to every delivery at once",
      loadGenerator: `autocannon 8, HTTPS keep-alive, ${s.connections} connections, ${s.durationSec} s measured after ${s.warmupSec} s warm-up, ${s.rounds} paired round(s), alternating first; the median round by added CPU µs shown`,
    },
    settings: s,
    blobs: {
      none: blobs[mid]!.none,
      subscribed: blobs[mid]!.subscribed,
      cpuUsPerVerdict: { none: m.noneCpuUs, subscribed: m.subscribedCpuUs, added: round(m.subscribedCpuUs - m.noneCpuUs, 1) },
      throughputRatio: round(blobs[mid]!.subscribed.rps / blobs[mid]!.none.rps, 3),
      rounds,
    },
    received: receiver.count(),
    otherCores: round(otherCores, 2),
    notes,
  };
}
