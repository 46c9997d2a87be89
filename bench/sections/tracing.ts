import { createServer, type Server as HttpServer } from "node:http";
import type { AddressInfo } from "node:net";
import path from "node:path";
import { inSpan, inSpanSync } from "../../src/tracing/spans.ts";
import { devTls, provisionApiKey, sqliteDeployment, startAttestd } from "../lib/attestd.ts";
import { round } from "../lib/load.ts";
import { compare, type MicroOptions, type MicroResult } from "../lib/micro.ts";
import { measureAttestd, type LoadSettings, type MeasuredLoad } from "../lib/partA.ts";
import type { VendorFixture } from "../lib/vendorFixture.ts";

/**
 * Issue 26 item 5: what tracing costs. Two `attestd serve` processes from one build, alike but for
 * `--otlp-endpoint`: "off" (the default: no SDK loaded, no hook registered) and "on" (every request sampled,
 * spans exported over OTLP/HTTP to a sink in this process that reads and discards them). They take turns on the
 * Part A workloads (nonces, then one vendor blob per nonce issued) in paired rounds; each workload's median round
 * is reported, as 2xx/s and as server CPU µs per request, whose difference is what tracing costs per request (per
 * verdict, for blobs). A micro-benchmark beside it shows what a span call costs with tracing off: a boolean test.
 */

export interface TracingWorkload {
  off: MeasuredLoad;
  on: MeasuredLoad;
  /** median round: server CPU µs per 2xx with tracing off and on, and their difference */
  cpuUsPerRequest: { off: number; on: number; added: number };
  /** median round: on's 2xx/s over off's */
  throughputRatio: number;
  rounds: { offRps: number; onRps: number; offCpuUs: number; onCpuUs: number }[];
}

export interface TracingSection {
  status: "ok";
  how: { servers: string; sink: string; loadGenerator: string; micro: string };
  settings: LoadSettings;
  nonces: TracingWorkload;
  blobs: TracingWorkload;
  /** what the sink received from the "on" server over the whole section */
  sink: { exports: number; bytes: number };
  /** a traced call with tracing off beside the plain call, ns per call */
  micro: Record<string, MicroResult>;
  /** cores other processes used, the most in any run (above 0.25 the figures are not trustworthy) */
  otherCores: number;
  notes: string[];
}

/** An OTLP/HTTP collector stand-in: answers 200 to every export, keeps only counts. */
async function startSink(): Promise<{ url: string; stats: TracingSection["sink"]; close(): Promise<void> }> {
  const stats = { exports: 0, bytes: 0 };
  const server: HttpServer = createServer((req, res) => {
    req.on("data", (c: Buffer) => (stats.bytes += c.length));
    req.on("end", () => {
      stats.exports++;
      res.writeHead(200, { "content-type": "application/json" }).end("{}");
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    stats,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

const cpuUs = (m: MeasuredLoad) => (m.rpsPerServerCore ? 1e6 / m.rpsPerServerCore : NaN);

function workload(pairs: { off: MeasuredLoad; on: MeasuredLoad }[]): TracingWorkload {
  const rounds = pairs.map(({ off, on }) => ({ offRps: round(off.rps, 1), onRps: round(on.rps, 1), offCpuUs: round(cpuUs(off), 1), onCpuUs: round(cpuUs(on), 1) }));
  // the median round by added CPU per request: a round where the machine was busy for one side sorts to an end
  const order = pairs.map((_, i) => i).sort((a, b) => rounds[a]!.onCpuUs - rounds[a]!.offCpuUs - (rounds[b]!.onCpuUs - rounds[b]!.offCpuUs));
  const mid = order[Math.floor(order.length / 2)]!;
  const { off, on } = pairs[mid]!;
  const r = rounds[mid]!;
  return {
    off,
    on,
    cpuUsPerRequest: { off: r.offCpuUs, on: r.onCpuUs, added: round(r.onCpuUs - r.offCpuUs, 1) },
    throughputRatio: round(on.rps / off.rps, 3),
    rounds,
  };
}

export async function runTracingSection(ctx: {
  tmp: string;
  fx: VendorFixture;
  settings: LoadSettings;
  micro: MicroOptions;
  log: (line: string) => void;
}): Promise<TracingSection> {
  const s = ctx.settings;
  const sink = await startSink();
  const off = sqliteDeployment(path.join(ctx.tmp, "attestd-traces-off"), "sqlite, 1 process, tracing off");
  const on = sqliteDeployment(path.join(ctx.tmp, "attestd-traces-on"), "sqlite, 1 process, tracing on");
  const offTls = await devTls(off.dataDir);
  const onTls = await devTls(on.dataDir);
  const offKey = await provisionApiKey(off);
  const onKey = await provisionApiKey(on);
  const offServer = await startAttestd(off, ctx.fx, offTls);
  const onServer = await startAttestd(on, ctx.fx, onTls, { extraArgs: ["--otlp-endpoint", sink.url, "--trace-sample-ratio", "1"] });
  const nonces: { off: MeasuredLoad; on: MeasuredLoad }[] = [];
  const blobs: { off: MeasuredLoad; on: MeasuredLoad }[] = [];
  try {
    for (let i = 0; i < s.rounds; i++) {
      // the order alternates, so neither side always runs on the warmer (or busier) half of a round
      const first = i % 2 === 0 ? "off" : "on";
      const results: Record<string, Awaited<ReturnType<typeof measureAttestd>>> = {};
      for (const side of first === "off" ? ["off", "on"] : ["on", "off"]) {
        const server = side === "off" ? offServer.server : onServer.server;
        results[side] = await measureAttestd(server.origin, server.pid, side === "off" ? offKey : onKey, ctx.fx, s);
      }
      nonces.push({ off: results.off!.nonces, on: results.on!.nonces });
      blobs.push({ off: results.off!.blobs, on: results.on!.blobs });
      const n = nonces.at(-1)!;
      const b = blobs.at(-1)!;
      ctx.log(
        `tracing round ${i + 1}/${s.rounds}: nonces ${Math.round(n.off.rps)} → ${Math.round(n.on.rps)}/s (${round(cpuUs(n.off), 0)} → ${round(cpuUs(n.on), 0)} CPU µs), blobs ${Math.round(b.off.rps)} → ${Math.round(b.on.rps)}/s (${round(cpuUs(b.off), 0)} → ${round(cpuUs(b.on), 0)} CPU µs)`,
      );
    }
  } finally {
    await offServer.server.stop();
    await onServer.server.stop();
    await sink.close();
  }

  // the off path of a traced call, beside the call itself: what every request pays for tracing it does not use
  const work = (): number => 1;
  const asyncWork = async (): Promise<number> => 1;
  const micro = await compare(
    {
      "call (sync)": () => work(),
      "inSpanSync, tracing off": () => inSpanSync("bench", {}, work),
      "call (async)": () => asyncWork(),
      "inSpan, tracing off": () => inSpan("bench", {}, asyncWork),
    },
    ctx.micro,
  );

  const all = [...nonces, ...blobs].flatMap((p) => [p.off, p.on]);
  const otherCores = Math.max(...all.map((m) => m.otherCores ?? 0));
  const notes: string[] = [];
  if (sink.stats.exports === 0) notes.push("the sink received no export: the 'on' server did not trace");
  if (otherCores > 0.25) notes.push(`other processes used up to ${otherCores.toFixed(2)} cores during the runs: the machine was busy`);
  return {
    status: "ok",
    how: {
      servers: `two child processes, ${offServer.command} (off) and the same with --otlp-endpoint SINK --trace-sample-ratio 1 (on: every request a trace)`,
      sink: "an HTTP server in the bench process answering 200 to every OTLP/HTTP export (JSON encoding), counting exports and bytes",
      loadGenerator: `autocannon 8, HTTPS keep-alive, ${s.connections} connections, pipelining ${s.pipelining}, ${s.durationSec} s measured after ${s.warmupSec} s warm-up, ${s.rounds} paired round(s), off and on alternating first; median round by added CPU µs shown`,
      micro: `${ctx.micro.rounds} interleaved round(s) of ${ctx.micro.roundMs} ms after ${ctx.micro.warmupMs} ms warm-up, in the bench process (tracing off there)`,
    },
    settings: s,
    nonces: workload(nonces),
    blobs: workload(blobs),
    sink: sink.stats,
    micro,
    otherCores: round(otherCores, 2),
    notes,
  };
}
