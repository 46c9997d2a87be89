import type { AndroidSection } from "../sections/android.ts";
import type { AndroidHttpSection } from "../sections/androidHttp.ts";
import type { ClusterSection } from "../sections/cluster.ts";
import type { HistorySection } from "../sections/history.ts";
import type { Comparison, HttpSection } from "../sections/http.ts";
import type { PlayIntegrityHttpSection } from "../sections/playIntegrityHttp.ts";
import type { AppAttestHttpSection } from "../sections/appAttestHttp.ts";
import type { ResultsSection } from "../sections/results.ts";
import type { StartupSection } from "../sections/startup.ts";
import type { TracingSection } from "../sections/tracing.ts";
import type { WebhooksSection } from "../sections/webhooks.ts";
import type { MeasuredLoad } from "./partA.ts";
import type { ProfileSummary } from "./profile.ts";
import { SQLITE_CACHE_ALLOWANCE_MB } from "./soak.ts";

export interface Skipped {
  status: "skipped";
  reason: string;
}
export interface Failed {
  status: "error";
  message: string;
}
type Outcome<T> = T | Skipped | Failed | undefined;

/** The JSON the bench writes (bench/results/*.json). `schema` changes when a field changes meaning. */
export interface BenchResults {
  schema: "attestd-bench/1";
  startedAt: string;
  finishedAt: string;
  quick: boolean;
  environment: {
    node: string;
    platform: string;
    arch: string;
    cpus: number;
    cpuModel: string;
    memoryMb: number;
    git?: { commit: string; dirty: boolean };
    /** 1, 5, 15 minute load averages when the run started */
    loadAverageAtStart: number[];
    note: string;
  };
  sections: {
    /** issue 21: the `attestd` command's and a server's start-up (`--only startup`) */
    startup: Outcome<StartupSection>;
    http: Outcome<HttpSection>;
    android: Outcome<AndroidSection>;
    results: Outcome<ResultsSection>;
    /** issue 15: android-key over HTTPS (`--only android-https`) */
    androidHttps?: Outcome<AndroidHttpSection>;
    /** issue 23: Play Integrity tokens over HTTPS (`--only play-integrity-https`) */
    playIntegrityHttps?: Outcome<PlayIntegrityHttpSection>;
    /** issue 25: App Attest attestations over HTTPS (`--only app-attest-https`) */
    appAttestHttps?: Outcome<AppAttestHttpSection>;
    /** issue 25: App Attest assertions over HTTPS (`--only app-attest-assertion-https`) */
    appAttestAssertionHttps?: Outcome<AppAttestHttpSection>;
    cluster: Outcome<ClusterSection>;
    history: Outcome<HistorySection>;
    /** issue 26: what OpenTelemetry tracing costs per request, off and on (`--only tracing`) */
    tracing?: Outcome<TracingSection>;
    /** issue 26: what a webhook endpoint for every verdict costs per verdict (`--only webhooks`) */
    webhooks?: Outcome<WebhooksSection>;
  };
}

function table(head: string[], rows: (string | number)[][]): string {
  const cells = [head, ...rows.map((r) => r.map(String))];
  const widths = head.map((_, i) => Math.max(...cells.map((r) => (r[i] ?? "").length)));
  const line = (r: string[]) => r.map((c, i) => (i === 0 ? c.padEnd(widths[i]!) : c.padStart(widths[i]!))).join("  ");
  return [line(head), widths.map((w) => "-".repeat(w)).join("  "), ...cells.slice(1).map(line)].join("\n");
}

const f0 = (x: number | undefined) => (x === undefined ? "-" : Math.round(x).toLocaleString("en-US"));
const f2 = (x: number | undefined) => (x === undefined ? "-" : x.toFixed(2));
const mb = (x: number | undefined) => (x === undefined ? "-" : `${Math.round(x)} MB`);
const signedPct = (x: number) => `${x >= 0 ? "+" : ""}${(x * 100).toFixed(1)} %`;
const pct = (x: number) => `${Math.round(x * 100)} %`;
const lat = (r: MeasuredLoad) => `${r.latencyMs.p50.toFixed(2)} / ${r.latencyMs.p99.toFixed(2)}`;

function notOk(name: string, s: Skipped | Failed): string {
  return `${name}: ${s.status === "skipped" ? `skipped: ${s.reason}` : `FAILED: ${s.message}`}`;
}

/** The most CPU that other processes took during any measured part of the run. */
export function otherWork(r: BenchResults): { max: number; where: string } {
  let max = 0;
  let where = "";
  const see = (x: number | undefined, label: string) => {
    if (x !== undefined && x > max) [max, where] = [x, label];
  };
  const h = r.sections.http;
  if (h?.status === "ok") {
    for (const w of ["nonces", "blobs"] as const) {
      see(h[w].attestd.otherCores, `attestd ${w}`);
      see(h[w].baseline.otherCores, `baseline ${w}`);
    }
  }
  const a = r.sections.android;
  if (a?.status === "ok") see(a.otherCores, "the android-key section");
  const re = r.sections.results;
  if (re?.status === "ok") see(re.otherCores, "the results section");
  for (const [s, what] of [[r.sections.androidHttps, "android-key"], [r.sections.playIntegrityHttps, "play-integrity"], [r.sections.appAttestHttps, "app-attest"], [r.sections.appAttestAssertionHttps, "app-attest assertion"]] as const) {
    if (s?.status !== "ok") continue;
    see(s.blobs.attestd.otherCores, `attestd ${what} blobs`);
    see(s.blobs.baseline.otherCores, `baseline ${what} blobs`);
  }
  const tr = r.sections.tracing;
  if (tr?.status === "ok") see(tr.otherCores, "the tracing section");
  const wh = r.sections.webhooks;
  if (wh?.status === "ok") see(wh.otherCores, "the webhooks section");
  const c = r.sections.cluster;
  if (c?.status === "ok") {
    for (const run of c.runs) {
      see(run.nonces.otherCores, `${run.label} nonces`);
      see(run.blobs.otherCores, `${run.label} blobs`);
    }
  }
  return { max, where };
}

/** The short human summary printed after a run. */
/** A workload's profile summaries, attestd's beside the baseline's: busy time per request and where it went. */
function profileLines(profiles: readonly ProfileSummary[], workload: string): string[] {
  const a = profiles.find((p) => p.server === "attestd" && p.workload === workload);
  if (!a) return [];
  const b = profiles.find((p) => p.server === "baseline" && p.workload === workload);
  const busy = (p: ProfileSummary) => (p.busyUsPerRequest !== undefined ? `${f0(p.busyUsPerRequest)} µs` : `${p.busyMs} ms`);
  const frames = (p: ProfileSummary, n: number) =>
    p.top.slice(0, n).map((t) => `      ${(t.usPerRequest !== undefined ? `${t.usPerRequest.toFixed(0)} µs` : "").padStart(7)} ${t.selfPct.toFixed(1).padStart(5)} %  ${t.frame}`);
  return [
    `  profile, ${workload}: main thread busy per request: attestd ${busy(a)}${b ? `, baseline ${busy(b)}` : ""}${a.wholeProfile ? " (whole profile: no samples in the window)" : ""}`,
    `    attestd, top self time (per request, share):`,
    ...frames(a, 8),
    `    attestd by area: ${a.byArea.slice(0, 6).map((x) => `${x.area} ${x.selfPct} %`).join(", ")}`,
    `    attestd code, inclusive: ${a.srcInclusive.slice(0, 6).map((x) => `${x.frame} ${x.inclusivePct} %`).join(", ")}`,
    ...(b ? [`    baseline, top self time:`, ...frames(b, 4)] : []),
  ];
}

/** A format over HTTPS beside its floor baseline (bench/lib/floorHttps.ts): one row, the rounds, the profile. */
function floorHttpsLines(
  title: string,
  workload: string,
  s: { how: { loadGenerator: string }; blobs: Comparison; verdict?: string; profiles?: ProfileSummary[]; notes: string[] },
): string[] {
  const c = s.blobs;
  return [
    `${title}: ${s.how.loadGenerator}`,
    table(
      ["workload", "attestd 2xx/s", "p50 / p99 ms", "srv cores", "floor baseline 2xx/s", "p50 / p99 ms", "srv cores", "ratio", "target", "", "per CPU-s"],
      [[
        workload,
        f0(c.attestd.rps),
        lat(c.attestd),
        f2(c.attestd.serverCores),
        f0(c.baseline.rps),
        lat(c.baseline),
        f2(c.baseline.serverCores),
        pct(c.ratio),
        `≥ ${pct(c.target)}`,
        c.met ? "met" : "MISSED",
        c.cpuRatio !== undefined ? pct(c.cpuRatio) : "-",
      ]],
    ),
    `  rounds: ${c.rounds.map((x) => pct(x.ratio)).join(", ")}; attestd answered ${s.verdict ?? "?"}`,
    ...profileLines(s.profiles ?? [], workload),
    ...s.notes.map((n) => `  note: ${n}`),
  ];
}

export function renderSummary(r: BenchResults): string {
  const out: string[] = [];
  out.push(
    `attestd bench ${r.quick ? "(--quick smoke run: numbers are indicative only) " : ""}— ${r.environment.cpus} × ${r.environment.cpuModel}, node ${r.environment.node}`,
  );
  out.push(r.environment.note);
  const busy = otherWork(r);
  if (busy.max > 0.25) {
    out.push(
      `WARNING: other work on this machine used up to ${busy.max.toFixed(2)} cores during ${busy.where} (load average ${r.environment.loadAverageAtStart.join(", ")} at start); those figures are unreliable: rerun when the machine is quiet`,
    );
  }
  out.push("");

  const st = r.sections.startup;
  if (st?.status === "ok") {
    out.push(`Start-up (issue 21): whole processes, median of ${st.runs} rounds beside node -e 0 (${f0(st.node.medianMs)} ms); load average ${st.loadAverage} at start`);
    out.push(
      table(
        ["command", "median", "÷ node -e 0", "target", ""],
        [
          [st.help.command, `${f0(st.help.medianMs)} ms`, `${f2(st.help.ratio)} ×`, `≤ ${st.help.target} ×`, st.help.met ? "met" : "MISSED"],
          [st.tenantList.command, `${f0(st.tenantList.medianMs)} ms`, `${f2(st.tenantList.ratio)} ×`, `≤ ${st.tenantList.target} ×`, st.tenantList.met ? "met" : "MISSED"],
          [st.readyz.command, `${f0(st.readyz.medianMs)} ms`, "-", `≤ ${f0(st.readyz.targetMs)} ms`, st.readyz.met ? "met" : "MISSED"],
        ],
      ),
    );
    out.push(`  first start on an empty data directory (dev CA, secrets key, schema): ${f0(st.readyz.firstStartMs)} ms`, "");
  } else if (st) out.push(notOk("Start-up", st), "");

  const h = r.sections.http;
  if (h?.status === "ok") {
    out.push(`Part A over HTTPS (issues 2 and 15): ${h.how.loadGenerator}; servers as child processes`);
    out.push(
      table(
        ["workload", "attestd 2xx/s", "p50 / p99 ms", "srv cores", "peak RSS", "baseline 2xx/s", "p50 / p99 ms", "srv cores", "peak RSS", "ratio", "target", "", "per CPU-s"],
        (["nonces", "blobs"] as const).map((w) => {
          const c = h[w];
          return [
            `POST /v2/${w}`,
            f0(c.attestd.rps),
            lat(c.attestd),
            f2(c.attestd.serverCores),
            mb(c.attestd.peakRssMb),
            f0(c.baseline.rps),
            lat(c.baseline),
            f2(c.baseline.serverCores),
            mb(c.baseline.peakRssMb),
            pct(c.ratio),
            `≥ ${pct(c.target)}`,
            c.met ? "met" : "MISSED",
            c.cpuRatio !== undefined ? pct(c.cpuRatio) : "-",
          ];
        }),
      ),
    );
    if (h.soak) {
      for (const p of [h.soak.nonces, h.soak.blobs]) {
        const growth = p.growth === undefined ? "-" : signedPct(p.growth);
        const heap = p.heap
          ? `; JS heap floor ${mb(p.heap.firstWindowFloorMb)} → ${mb(p.heap.lastWindowFloorMb)} (${signedPct(p.heap.growth)}; peaks ${mb(p.heap.firstWindowPeakMb)} → ${mb(p.heap.lastWindowPeakMb)})`
          : "";
        out.push(
          `  memory soak, ${p.workload}: ${p.durationSec.toFixed(0)} s at ${f0(p.rps)}/s, peak RSS ${mb(p.peakRssMb)}; peak of the first ${p.windowSec} s ${mb(p.firstWindowPeakMb)}, of the last ${p.windowSec} s ${mb(p.lastWindowPeakMb)} (${growth})${heap}; bound ${p.heap ? `heap floor +${pct(p.bound)}, RSS +${pct(p.bound)} + ${SQLITE_CACHE_ALLOWANCE_MB} MB of SQLite page cache` : `+${pct(p.bound)}`}: ${p.flat === undefined ? "-" : p.flat ? "flat" : "GROWING"}`,
        );
      }
    }
    for (const w of ["POST /v2/nonces", "POST /v2/blobs"]) out.push(...profileLines(h.profiles, w));
    for (const n of h.notes) out.push(`  note: ${n}`);
    out.push("");
  } else if (h) out.push(notOk("Part A over HTTPS", h), "");

  const a = r.sections.android;
  if (a?.status === "ok") {
    out.push("android-key appraisal on real chains (issue 3), library level, one thread: µs per chain (ops/s)");
    const cell = (x: { usPerOp: number; opsPerSec: number; accepted: boolean }) =>
      `${f0(x.usPerOp)} (${f0(x.opsPerSec)})${x.accepted ? "" : " rejected"}`;
    out.push(
      table(
        ["chain", "attestd", "attestd cold", "floor", "simplewebauthn", "pkijs", "÷ floor", "× swa", "× pkijs"],
        a.chains.map((c) => [
          c.name,
          cell(c.results.attestd),
          cell(c.results.attestdCold),
          cell(c.results.floor),
          cell(c.results.simplewebauthn),
          cell(c.results.pkijs),
          f2(c.timesFloor),
          f2(c.speedup.vsSimplewebauthn),
          f2(c.speedup.vsPkijs),
        ]),
      ),
    );
    out.push(
      `  geomean speed-up: ${a.summary.speedupVsSimplewebauthn}× simplewebauthn, ${a.summary.speedupVsPkijs}× pkijs (cold: ${a.summary.coldSpeedupVsSimplewebauthn}×, ${a.summary.coldSpeedupVsPkijs}×); target "${a.summary.target}": ${a.summary.met ? "met" : "MISSED"}${a.summary.coldMet ? " (cold too)" : " (cold: not met)"}`,
      `  attestd ÷ floor: ${a.summary.timesFloor} geomean, ${a.summary.worstTimesFloor} worst chain; issue 15 target "${a.summary.floorTarget}": ${a.summary.floorMet ? "met" : "MISSED"}`,
    );
    for (const n of a.notes) out.push(`  note: ${n}`);
    out.push("");
  } else if (a) out.push(notOk("android-key appraisal", a), "");

  const re = r.sections.results;
  if (re?.status === "ok") {
    out.push(
      `Signed results and device pinning (issue 14), library level, ${re.how.concurrency} verdicts in flight: CPU µs per verdict (PostgreSQL's included), median of ${re.how.rounds} paired round(s); wall µs in brackets`,
    );
    const cpu = (v: { cpuUsPerVerdict: number; backingCpuUsPerVerdict?: number; usPerVerdict: number }) =>
      `${f0(v.cpuUsPerVerdict + (v.backingCpuUsPerVerdict ?? 0))} (${f0(v.usPerVerdict)})`;
    out.push(
      table(
        ["store", "no deviceId", "first pin", "× plain", "pinned device", "× plain"],
        re.pinning.backends.map((b) => [b.store, cpu(b.plain), cpu(b.firstPin), f2(b.ratio.firstPin), cpu(b.repeat), f2(b.ratio.repeat)]),
      ),
    );
    const e = re.ear;
    out.push(
      `  EAR (ES256 JWT, ${e.ear.bytes} B) ${f0(e.ear.cpuUsPerOp)} µs CPU vs the plain record's JSON (${e.plain.bytes} B) ${f2(e.plain.cpuUsPerOp)} µs: +${f0(e.addedCpuUs)} µs per verdict, ×${f2(e.perVerdictRatio)} the CPU of a whole SQLite verdict; verified against the JWKS: ${e.verified ? "yes" : "NO"}`,
    );
    const h = re.earHttps;
    if (h && "status" in h) out.push(`  EAR over HTTPS: FAILED: ${h.message}`);
    else if (h) {
      const per = (x: { rps: number; serverCpuUsPer2xx?: number }) => `${f0(x.rps)}/s${x.serverCpuUsPer2xx !== undefined ? `, ${f0(x.serverCpuUsPer2xx)} µs server CPU each` : ""}`;
      out.push(
        `  over HTTPS, POST /v2/blobs (median of ${h.rounds.length} round(s)): record ${per(h.plain)}; Accept: application/eat+jwt ${per(h.ear)}; CPU ×${f2(h.cpuRatio)}, throughput ÷${f2(h.rpsRatio)}${h.answeredEar ? "" : "; the EAR run did NOT answer JWTs"}`,
      );
    }
    if (re.pinning.skipped) out.push(`  PostgreSQL skipped: ${re.pinning.skipped}`);
    for (const n of re.notes) out.push(`  note: ${n}`);
    out.push("");
  } else if (re) out.push(notOk("Signed results and device pinning", re), "");
  const floorSections = [
    ["android-key over HTTPS (issue 15)", "POST /v2/blobs (android-key)", r.sections.androidHttps],
    ["Play Integrity over HTTPS (issue 23)", "POST /v2/blobs (play-integrity)", r.sections.playIntegrityHttps],
    ["App Attest over HTTPS (issue 25)", "POST /v2/blobs (app-attest attestation)", r.sections.appAttestHttps],
    ["App Attest assertions over HTTPS (issue 25)", "POST /v2/blobs (app-attest assertion)", r.sections.appAttestAssertionHttps],
  ] as const;
  for (const [title, workload, fs] of floorSections) {
    if (fs?.status === "ok") out.push(...floorHttpsLines(title, workload, fs), "");
    else if (fs) out.push(notOk(title, fs), "");
  }

  const c = r.sections.cluster;
  if (c?.status === "ok") {
    out.push(`Multi-instance (issue 5): ${c.how.loadGenerator}`);
    out.push(
      table(
        ["deployment", "nonces 2xx/s", "p50 / p99 ms", "blobs 2xx/s", "p50 / p99 ms", "srv cores", "pg+redis cores", "blobs/s per srv core", "peak RSS"],
        c.runs.map((x) => [
          x.label,
          f0(x.nonces.rps),
          lat(x.nonces),
          f0(x.blobs.rps),
          lat(x.blobs),
          f2(x.blobs.serverCores),
          f2(x.blobs.backingCores),
          f0(x.blobs.rpsPerServerCore),
          mb(Math.max(x.nonces.peakRssMb ?? 0, x.blobs.peakRssMb ?? 0) || undefined),
        ]),
      ),
    );
    for (const line of c.scaling.notes) out.push(`  ${line}`);
    for (const n of c.notes) out.push(`  note: ${n}`);
    out.push("");
  } else if (c) out.push(notOk("Multi-instance", c), "");

  const tr = r.sections.tracing;
  if (tr?.status === "ok") {
    out.push(`Traces (issue 26): attestd with tracing off (default) and on (every request sampled, exported over OTLP/HTTP to a local sink); median of ${tr.settings.rounds} paired round(s)`);
    out.push(
      table(
        ["workload", "off 2xx/s", "on 2xx/s", "on ÷ off", "off CPU µs/req", "on CPU µs/req", "added µs/req", "p50 / p99 ms off", "p50 / p99 ms on"],
        (["nonces", "blobs"] as const).map((w) => [
          w === "nonces" ? "POST /v2/nonces" : "POST /v2/blobs (vendor)",
          f0(tr[w].off.rps),
          f0(tr[w].on.rps),
          f2(tr[w].throughputRatio),
          f0(tr[w].cpuUsPerRequest.off),
          f0(tr[w].cpuUsPerRequest.on),
          f0(tr[w].cpuUsPerRequest.added),
          lat(tr[w].off),
          lat(tr[w].on),
        ]),
      ),
    );
    const m = tr.micro;
    const ns = (k: string) => (m[k] ? `${(m[k].usPerOp * 1000).toFixed(0)} ns` : "-");
    out.push(`  a traced call with tracing off: inSpanSync ${ns("inSpanSync, tracing off")} vs the call ${ns("call (sync)")}; inSpan ${ns("inSpan, tracing off")} vs the async call ${ns("call (async)")}`);
    out.push(`  the sink received ${f0(tr.sink.exports)} exports, ${mb(tr.sink.bytes / 2 ** 20)}`);
    for (const n of tr.notes) out.push(`  note: ${n}`);
    out.push("");
  } else if (tr) out.push(notOk("Traces", tr), "");

  const whs = r.sections.webhooks;
  if (whs?.status === "ok") {
    const b = whs.blobs;
    out.push(`Webhooks (issue 26): a tenant with no endpoint, and with one endpoint for every verdict (outbox row + signed delivery to a local receiver); median of ${whs.settings.rounds} paired round(s)`);
    out.push(
      table(
        ["workload", "none 2xx/s", "subscribed 2xx/s", "sub ÷ none", "none CPU µs/verdict", "subscribed CPU µs/verdict", "added µs/verdict", "p50 / p99 ms none", "p50 / p99 ms subscribed"],
        [["POST /v2/blobs (vendor)", f0(b.none.rps), f0(b.subscribed.rps), f2(b.throughputRatio), f0(b.cpuUsPerVerdict.none), f0(b.cpuUsPerVerdict.subscribed), f0(b.cpuUsPerVerdict.added), lat(b.none), lat(b.subscribed)]],
      ),
    );
    out.push(`  the receiver got ${f0(whs.received)} deliveries`);
    for (const n of whs.notes) out.push(`  note: ${n}`);
    out.push("");
  } else if (whs) out.push(notOk("Webhooks", whs), "");

  const hi = r.sections.history;
  if (hi?.status === "ok") {
    out.push(`Portal verdict history (issue 12): ${hi.target}; one signed-in person paging, ms per request`);
    for (const b of hi.backends) {
      out.push(
        `  ${b.store}: ${f0(b.seededVerdicts.measured)} verdicts for the tenant, ${f0(b.seededVerdicts.other)} for another (seeded in ${b.seedSeconds} s); first page p95 ${b.firstPageP95Ms} ms: ${b.met ? "met" : "MISSED"}`,
      );
      out.push(
        table(
          ["query", "p50", "p95", "p99", "max", "rows"],
          b.queries.map((q) => [`  ${q.name}`, f2(q.latencyMs.p50), f2(q.latencyMs.p95), f2(q.latencyMs.p99), f2(q.latencyMs.max), q.rows]),
        ),
      );
    }
    for (const n of hi.notes) out.push(`  note: ${n}`);
    out.push("");
  } else if (hi) out.push(notOk("Portal verdict history", hi), "");
  return out.join("\n");
}
