import type { Server, Socket } from "node:net";
import { addressListMatcher } from "../auth/restrictions.ts";

/**
 * How long a client may take, and how many connections one address may hold: what keeps a slow or greedy client
 * from holding the server's sockets (docs/reliability.md, "Slow and greedy clients"). The timeouts are node:http's
 * own (a timed-out request gets a 408 from clientErrors.ts); the per-address cap is counted here.
 */
export interface ConnectionLimits {
  /** node:http `headersTimeout`: the headers of a request must have arrived by then (0: off) */
  headersTimeoutMs: number;
  /** node:http `requestTimeout`: the whole request, body included (0: off) */
  requestTimeoutMs: number;
  /** socket inactivity, in either direction, mid-request included (0: off) */
  idleTimeoutMs: number;
  /** how long an idle kept-alive connection waits for the next request */
  keepAliveTimeoutMs: number;
  /** open connections per client address in this process (0: no cap) */
  maxConnectionsPerAddress: number;
}

/**
 * node:http checks the header and request timeouts on a timer (`connectionsCheckingInterval`, 30 s by default), so
 * a timeout is enforced up to that much late: check at a tenth of the shorter one, between 50 ms and 1 s.
 */
export function connectionsCheckingIntervalMs(l: ConnectionLimits): number {
  const shortest = Math.min(...[l.headersTimeoutMs, l.requestTimeoutMs].filter((ms) => ms > 0), 10_000);
  return Math.min(1000, Math.max(50, Math.floor(shortest / 10)));
}

/** The node:http server options the limits set (what Fastify does not set itself from its own options). */
export function serverTimeoutOptions(l: ConnectionLimits): { headersTimeout: number; requestTimeout: number; connectionsCheckingInterval: number } {
  return {
    headersTimeout: l.headersTimeoutMs,
    requestTimeout: l.requestTimeoutMs,
    connectionsCheckingInterval: connectionsCheckingIntervalMs(l),
  };
}

/**
 * Closes, as soon as it is accepted, a connection from an address that already holds `max` open ones in this
 * process: one client cannot take every socket, and the others are served meanwhile. Addresses in `exempt` (the
 * trusted proxies, whose connections carry many clients) are not counted. Counting is by TCP peer, before TLS, so
 * a refused connection costs no handshake; it gets no HTTP answer, only the close.
 */
export function capConnectionsPerAddress(server: Server, max: number, exempt: readonly string[], onRefused: () => void): void {
  if (max <= 0) return;
  const isExempt = addressListMatcher(exempt);
  const open = new Map<string, number>();
  server.on("connection", (socket: Socket) => {
    const address = socket.remoteAddress;
    if (address === undefined || isExempt(address)) return;
    const n = open.get(address) ?? 0;
    if (n >= max) {
      onRefused();
      socket.destroy();
      return;
    }
    open.set(address, n + 1);
    socket.once("close", () => {
      const left = (open.get(address) ?? 1) - 1;
      if (left > 0) open.set(address, left);
      else open.delete(address);
    });
  });
}
