import type { CampaignResults } from "./run.ts";
import type { FuzzResult } from "./parts/fuzz.ts";
import type { KillResult } from "./parts/kill.ts";
import type { OutageResult } from "./parts/outage.ts";
import type { SlowResult } from "./parts/slowClients.ts";
import type { SoakResult } from "./parts/soak.ts";

/** The campaign's short table: one line per check, PASS/FAIL and the figures that back it. */

const n = (x: number) => x.toLocaleString("en-US");
const failed = (r: unknown): r is { error: string } => typeof r === "object" && r !== null && "error" in r;

export function renderTable(r: CampaignResults): string {
  const rows: [string, string, string][] = [];
  const verdict = (ok: boolean) => (ok ? "PASS" : "FAIL");
  const p = r.parts;
  if (failed(p.fuzz)) rows.push(["fuzz", "FAIL", p.fuzz.error]);
  else
    for (const f of (p.fuzz ?? []) as FuzzResult[]) {
      const outcomes = Object.entries(f.outcomes)
        .sort((a, b) => b[1] - a[1])
        .map(([k, v]) => `${k} ${n(v)}`)
        .join(", ");
      rows.push([
        `fuzz ${f.format}`,
        verdict(f.violations === 0),
        `${n(f.cases)} cases (${outcomes}; Yes only with the signed bytes unchanged), ${f.violations} violations, peak RSS ${f.peakRssMb} MiB (bound ${f.rssLimitMb}), ${n(f.casesPerSecond)}/s`,
      ]);
    }
  if (failed(p.kill)) rows.push(["kill -9", "FAIL", p.kill.error]);
  else
    for (const k of (p.kill ?? []) as KillResult[]) {
      const sum = (f: (x: KillResult["rounds"][number]) => number) => k.rounds.reduce((a, x) => a + f(x), 0);
      rows.push([
        `kill -9, ${k.backend}`,
        verdict(k.ok),
        `${k.rounds.length} round(s), ${n(k.acknowledged)} acknowledged, ${n(sum((x) => x.ledger.readBackIdentical))} read back identical, ` +
          `${sum((x) => x.ledger.missing + x.ledger.different)} missing/different, ${sum((x) => x.ledger.acceptedTwice + x.ledger.replayAccepted)} nonces accepted twice, ` +
          `${sum((x) => x.unexpected)} unexpected answers, restart ${Math.max(...k.rounds.map((x) => x.restartMs))} ms`,
      ]);
    }
  if (failed(p.outage)) rows.push(["store outage", "FAIL", p.outage.error]);
  else
    for (const o of (p.outage ?? []) as OutageResult[]) {
      rows.push([
        `${o.store} stop + restart`,
        verdict(o.ok),
        `${n(o.during.unavailable)} × 503 meanwhile (${o.during.violations} without Retry-After or other), slowest 503 ${o.during.maxUnavailableMs} ms, ` +
          `ready ${o.recoveryMs} ms after restart, ${o.after.failures} failures after, ${n(o.ledger.readBackIdentical)}/${n(o.ledger.acknowledged)} acknowledged intact`,
      ]);
    }
  if (failed(p.soak)) rows.push(["soak", "FAIL", p.soak.error]);
  else if (p.soak) {
    const s = p.soak as SoakResult;
    rows.push([
      `soak ${s.minutes} min`,
      verdict(s.ok),
      `${s.rateCyclesPerSecond} cycles/s (peak ${s.peakCyclesPerSecond}), ${n(s.cycles)} cycles, ${s.errors} errors, ` +
        `RSS ${s.rss.firstWindowMb} → ${s.rss.lastWindowMb} MiB (${s.rss.flat ? "flat" : "GROWING"}: bound ${s.rss.allowedMb}), JS heap floor ${s.heap.firstWindowFloorMb} → ${s.heap.lastWindowFloorMb} MiB (${s.heap.flat ? "flat" : "GROWING"}), blob p50/p99 ${s.latencyMs.blob.p50}/${s.latencyMs.blob.p99} ms`,
    ]);
  }
  if (failed(p.slow)) rows.push(["slow clients", "FAIL", p.slow.error]);
  else if (p.slow) {
    const s = p.slow as SlowResult;
    rows.push([
      `${s.clients} slow clients`,
      verdict(s.ok),
      `normal client p50/p99 ms — nonce ${s.without.nonce.p50}/${s.without.nonce.p99} alone, ${s.with.nonce.p50}/${s.with.nonce.p99} beside them; ` +
        `blob ${s.without.blob.p50}/${s.without.blob.p99} → ${s.with.blob.p50}/${s.with.blob.p99}; ${s.normalFailures} failures; ${s.slowPeakOpen} held open, ${s.slowCutOff} cut off`,
    ]);
  }
  const w = Math.max(...rows.map((x) => x[0].length));
  const e = r.environment;
  return [
    `attestd reliability campaign${r.quick ? " (--quick)" : ""}, ${r.startedAt} → ${r.finishedAt}, ${e.cpus} × ${e.cpuModel}, node ${e.node}, ` +
      `commit ${e.git ? e.git.commit.slice(0, 7) + (e.git.dirty ? " (dirty)" : "") : "?"}, load average ${e.loadAverageAtStart[0]} → ${e.loadAverageAtEnd[0]}`,
    ...rows.map(([a, b, c]) => `${a.padEnd(w)}  ${b}  ${c}`),
    r.ok ? "ALL PASS" : "SOME FAILED",
  ].join("\n");
}
