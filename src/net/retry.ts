import type { Rng } from "../clock.ts";

/**
 * The pieces of a bounded retry that every caller of an outside service shares (Google's Play Integrity decoding,
 * Apple's App Attest receipt refresh): what a failed fetch was in words, how long a Retry-After asks to wait, the
 * pause before the next attempt, and a pause that shutdown cuts short. Each caller keeps its own loop, since what
 * an answer means (and whether it is worth another attempt) is the service's.
 */

/**
 * A network failure as a reason can say it, or undefined for an error that is not the network's. undici's
 * "fetch failed" hides the cause (ENOTFOUND, ECONNREFUSED...) in `cause`; `public` names no host.
 */
export function networkCause(e: unknown): { text: string; public: string } | undefined {
  const err = e as Error & { cause?: { code?: string; message?: string } };
  if (err?.name === "TimeoutError") return { text: "no answer in time", public: "timeout" };
  if (!(err instanceof TypeError) || !err.cause) return undefined;
  const code = err.cause.code;
  const words: Record<string, string> = {
    ENOTFOUND: "no network, or the name did not resolve",
    EAI_AGAIN: "no network, or the name did not resolve",
    ECONNREFUSED: "connection refused",
    ECONNRESET: "connection reset",
    ENETUNREACH: "no network",
    EHOSTUNREACH: "no route to the host",
    UND_ERR_SOCKET: "connection closed",
  };
  return { text: `${code ?? "network error"}: ${err.cause.message ?? ""}`.trim(), public: (code && words[code]) ?? "network error" };
}

/** Retry-After in ms from `nowMs`: delta-seconds or an HTTP date; undefined when absent or unreadable */
export function retryAfterMs(header: string | null, nowMs: number): number | undefined {
  if (!header) return undefined;
  if (/^\d+$/.test(header.trim())) return Number(header.trim()) * 1000;
  const at = Date.parse(header);
  return Number.isNaN(at) ? undefined : Math.max(0, at - nowMs);
}

/**
 * The pause after failed attempt `attempt` (1-based): `baseMs` doubled after each, capped at 8×; with an `rng`
 * spread over its upper half, so callers that met the same outage do not come back in step (tests: exact).
 */
export function backoffDelayMs(attempt: number, baseMs: number, rng?: Rng): number {
  const backoff = baseMs * 2 ** Math.min(attempt - 1, 3);
  return rng ? backoff / 2 + (backoff / 2) * (rng.bytes(1)[0]! / 255) : backoff;
}

/** Waits `ms`, or less when `signal` aborts (shutdown); never rejects. */
export function abortablePause(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const done = () => {
      clearTimeout(timer);
      signal.removeEventListener("abort", done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    signal.addEventListener("abort", done, { once: true });
  });
}
