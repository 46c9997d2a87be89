/**
 * How PostgreSQL and Redis are first reached, at `attestd serve` and at every CLI command that opens the store.
 *
 * A connection that timed out is tried again, each attempt allowed twice the time to connect of the one before
 * (2 s, 4 s, 8 s for Redis, 3 s, 6 s, 12 s for PostgreSQL): a network or a name server still settling answers a
 * later attempt. The case that made this necessary is an `attestd` command exec'd in a container that has just
 * started (CI's compose test with podman): its first connection to Redis timed out, and three attempts of 2 s
 * each were once not enough. A resolver that lost a query waits 5 s before asking again, which only a longer
 * attempt outlasts. A refusal, an unknown host or an authentication error is final at once: nothing is
 * listening, and waiting would not change it.
 */
export const CONNECT_ATTEMPTS = 3;

export interface ConnectAttempts {
  /** the first attempt's time limit; each later one doubles it */
  firstTimeoutMs: number;
  /** told before each new attempt, with a line an operator can read (the CLI prints it, `serve` logs it) */
  onRetry?: ((message: string) => void) | undefined;
}

export async function connectPatiently<T>(
  what: string,
  attempts: ConnectAttempts,
  connect: (timeoutMs: number) => Promise<T>,
  timedOut: (err: unknown) => boolean,
): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    const started = performance.now();
    try {
      return await connect(attempts.firstTimeoutMs * 2 ** (attempt - 1));
    } catch (err) {
      if (attempt >= CONNECT_ATTEMPTS || !timedOut(err)) throw err;
      // the time it took, not the limit: a connection accepted but never answered waits on a command's timeout
      attempts.onRetry?.(`${what} did not answer in ${seconds(performance.now() - started)}; trying again (attempt ${attempt + 1} of ${CONNECT_ATTEMPTS})`);
    }
  }
}

function seconds(ms: number): string {
  return `${Number((ms / 1000).toFixed(1))} s`;
}

/** host:port of a server's URL, for messages: never its credentials or query (a socket path's URL says so) */
export function serverAddress(url: string, defaultPort: number): string {
  try {
    const u = new URL(url);
    return u.hostname ? `${u.hostname}:${u.port || defaultPort}` : "its socket";
  } catch {
    return "the configured URL";
  }
}
