import { execFileSync } from "node:child_process";
import { performance } from "node:perf_hooks";
import { readdirSync, readFileSync } from "node:fs";

/**
 * CPU seconds used by a process and its descendants (Linux /proc), so a load run can say how many cores the
 * server actually burned: requests per CPU-second is what carries over to a machine with more cores. Returns
 * undefined where /proc is not available.
 */
let ticks: number | undefined;
function clockTicks(): number {
  if (ticks === undefined) {
    try {
      ticks = Number(execFileSync("getconf", ["CLK_TCK"], { encoding: "utf8" }).trim()) || 100;
    } catch {
      ticks = 100;
    }
  }
  return ticks;
}

interface ProcStat {
  pid: number;
  ppid: number;
  comm: string;
  /** utime + stime, in clock ticks */
  cpu: number;
}

function readStat(pid: string): ProcStat | undefined {
  try {
    const s = readFileSync(`/proc/${pid}/stat`, "utf8");
    const close = s.lastIndexOf(")");
    const comm = s.slice(s.indexOf("(") + 1, close);
    const f = s.slice(close + 2).split(" ");
    // fields after comm: state(0) ppid(1) ... utime(11) stime(12)
    return { pid: Number(pid), ppid: Number(f[1]), comm, cpu: Number(f[11]) + Number(f[12]) };
  } catch {
    return undefined;
  }
}

function allStats(): ProcStat[] {
  return readdirSync("/proc")
    .filter((d) => /^\d+$/.test(d))
    .map(readStat)
    .filter((s): s is ProcStat => s !== undefined);
}

/** CPU seconds of `rootPid` and everything below it (live processes only). */
export function treeCpuSeconds(rootPid: number): number | undefined {
  try {
    const stats = allStats();
    const children = new Map<number, ProcStat[]>();
    for (const s of stats) children.set(s.ppid, [...(children.get(s.ppid) ?? []), s]);
    let total = 0;
    const stack = stats.filter((s) => s.pid === rootPid);
    if (stack.length === 0) return undefined;
    while (stack.length) {
      const s = stack.pop()!;
      total += s.cpu;
      stack.push(...(children.get(s.pid) ?? []));
    }
    return total / clockTicks();
  } catch {
    return undefined;
  }
}

/** CPU seconds of all processes whose command name matches (e.g. the local postgres and redis-server). */
export function commandCpuSeconds(match: RegExp): number | undefined {
  try {
    return allStats().filter((s) => match.test(s.comm)).reduce((a, s) => a + s.cpu, 0) / clockTicks();
  } catch {
    return undefined;
  }
}

/** CPU seconds this (the bench / load generator) process has used. */
export function selfCpuSeconds(): number {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1e6;
}

/** CPU seconds the whole machine has been busy (all cores; /proc/stat), for spotting other work during a run. */
export function systemBusySeconds(): number | undefined {
  try {
    const first = readFileSync("/proc/stat", "utf8").split("\n")[0]!.trim().split(/\s+/).slice(1).map(Number);
    const [user = 0, nice = 0, system = 0, , , irq = 0, softirq = 0, steal = 0] = first;
    return (user + nice + system + irq + softirq + steal) / clockTicks();
  } catch {
    return undefined;
  }
}

/** `rootPid` and every process below it (live ones), read once: a server's workers are forked at start-up. */
export function treePids(rootPid: number): number[] {
  try {
    const stats = allStats();
    const out: number[] = [];
    const stack = stats.filter((s) => s.pid === rootPid);
    while (stack.length) {
      const s = stack.pop()!;
      out.push(s.pid);
      stack.push(...stats.filter((c) => c.ppid === s.pid));
    }
    return out;
  } catch {
    return [];
  }
}

let pageBytes: number | undefined;
/** Resident set of the given processes together, in bytes (/proc/PID/statm); undefined where /proc is missing. */
export function rssBytes(pids: readonly number[]): number | undefined {
  if (pageBytes === undefined) {
    try {
      pageBytes = Number(execFileSync("getconf", ["PAGESIZE"], { encoding: "utf8" }).trim()) || 4096;
    } catch {
      pageBytes = 4096;
    }
  }
  let total = 0;
  let seen = false;
  for (const pid of pids) {
    try {
      total += Number(readFileSync(`/proc/${pid}/statm`, "utf8").split(" ")[1]) * pageBytes;
      seen = true;
    } catch {
      // exited meanwhile: counts as nothing
    }
  }
  return seen ? total : undefined;
}

/**
 * Samples the resident memory of a server's process tree every `everyMs` while a load runs, so every run can say
 * how much memory it peaked at (and the soak whether it kept growing). The interval is unref'd and costs the load
 * generator one small file read per process per sample.
 */
export class RssSampler {
  readonly samples: { atMs: number; bytes: number }[] = [];
  private readonly pids: number[];
  private readonly t0 = performance.now();
  private readonly timer: NodeJS.Timeout;

  constructor(rootPid: number, everyMs = 250) {
    this.pids = treePids(rootPid);
    this.take();
    this.timer = setInterval(() => this.take(), everyMs);
    this.timer.unref();
  }

  private take(): void {
    const bytes = rssBytes(this.pids);
    if (bytes !== undefined) this.samples.push({ atMs: performance.now() - this.t0, bytes });
  }

  stop(): void {
    clearInterval(this.timer);
    this.take();
  }

  /** the highest sample, in MB (undefined without /proc) */
  peakMb(fromMs = 0, toMs = Infinity): number | undefined {
    let peak: number | undefined;
    for (const s of this.samples) if (s.atMs >= fromMs && s.atMs <= toMs) peak = Math.max(peak ?? 0, s.bytes);
    return peak === undefined ? undefined : Math.round((peak / 2 ** 20) * 10) / 10;
  }
}
