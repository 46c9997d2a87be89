import net from "node:net";
import { Client, latency, sleep, startLoad, tally, type Outcome } from "../lib/load.ts";
import type { Deployment } from "../lib/deployment.ts";

/**
 * Part (e): slow clients on the loopback while a normal client works. The normal client runs nonce + blob cycles
 * one at a time, first alone, then beside `clients` slow connections from 127.0.0.2-127.0.0.51 (under the
 * per-address cap): half send their headers a byte at a time, half send headers promising a body and then trickle
 * it. A slow connection the server cuts off (its header or request timeout) is replaced at once, so the pressure
 * stays. Every normal request must succeed; its latency with and without is reported, not asserted.
 */

export interface SlowOptions {
  clients: number;
  phaseMs: number;
  /** pause between a slow client's bytes */
  byteEveryMs: number;
}

export interface SlowResult {
  clients: number;
  without: { nonce: ReturnType<typeof latency>; blob: ReturnType<typeof latency> };
  with: { nonce: ReturnType<typeof latency>; blob: ReturnType<typeof latency> };
  normalAnswers: Record<string, number>;
  normalFailures: number;
  /** most slow connections open at once, and how many the server closed (timeouts) */
  slowPeakOpen: number;
  slowCutOff: number;
  ok: boolean;
}

async function normalPhase(d: Deployment, client: Client, ms: number): Promise<Outcome[]> {
  const out: Outcome[] = [];
  const load = startLoad(client, d.fx, { bases: () => d.bases(), concurrency: 1, observe: (x) => out.push(x) });
  await sleep(ms);
  await load.stop();
  return out;
}

export async function slowClients(d: Deployment, o: SlowOptions): Promise<SlowResult> {
  const client = new Client(d.apiKey);
  const port = d.instances[0]!.port;
  let open = 0;
  let peakOpen = 0;
  let cutOff = 0;
  let stopping = false;
  const sockets = new Set<net.Socket>();
  const slow = (i: number) => {
    if (stopping) return;
    const s = net.connect({ host: "127.0.0.1", port, localAddress: `127.0.0.${2 + (i % 50)}` });
    sockets.add(s);
    let timer: NodeJS.Timeout | undefined;
    s.on("connect", () => {
      peakOpen = Math.max(peakOpen, ++open);
      const head =
        i % 2 === 0
          ? `POST /v2/nonces HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: `
          : `POST /v2/blobs?nonce=x HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/octet-stream\r\nContent-Length: 5000\r\n\r\n`;
      s.write(head);
      timer = setInterval(() => s.write("a"), o.byteEveryMs);
    });
    s.on("data", () => undefined);
    s.on("error", () => undefined);
    s.on("close", (hadError) => {
      if (timer) clearInterval(timer);
      sockets.delete(s);
      if (s.readyState !== "opening") open = Math.max(0, open - 1);
      if (!stopping) {
        cutOff++;
        setTimeout(() => slow(i), hadError ? 100 : 0);
      }
    });
  };
  try {
    const without = await normalPhase(d, client, o.phaseMs);
    for (let i = 0; i < o.clients; i++) slow(i);
    await sleep(500);
    const withSlow = await normalPhase(d, client, o.phaseMs);
    const all = [...without, ...withSlow];
    const failures = all.filter((x) => x.status !== 200).length;
    const split = (xs: Outcome[]) => ({ nonce: latency(xs.filter((x) => x.op === "nonce")), blob: latency(xs.filter((x) => x.op === "blob")) });
    return {
      clients: o.clients,
      without: split(without),
      with: split(withSlow),
      normalAnswers: tally(all),
      normalFailures: failures,
      slowPeakOpen: peakOpen,
      slowCutOff: cutOff,
      ok: failures === 0 && withSlow.length > 0 && peakOpen >= o.clients * 0.9,
    };
  } finally {
    stopping = true;
    for (const s of sockets) s.destroy();
    client.close();
  }
}
