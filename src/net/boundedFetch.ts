/**
 * One outbound HTTP exchange as attestd makes them all (Google's status list and roots, Google's Play Integrity
 * decoding): a timer over the answer and the body together, no redirect followed, the body read in chunks up to a
 * bound. The one home of these rules, so every caller of the network refuses the same things the same way.
 */

export interface BoundedFetchOptions {
  /** called unbound, as the platform's fetch expects; tests inject a network */
  fetch: typeof fetch;
  /** the answer and its body together; past it the request is aborted with a `TimeoutError` */
  timeoutMs: number;
  /** largest body of a 2xx answer; a larger one (declared or counted) is a `FetchRefused` "too-large" */
  maxBytes: number;
  /**
   * what is kept of another answer's body (an error page, for the log): its first bytes, never a failure however
   * long, default 4 KiB
   */
  maxErrorBytes?: number;
  /** aborts the request early (shutdown); its reason is what the call rejects with */
  signal?: AbortSignal;
}

export interface BoundedResponse {
  status: number;
  headers: Headers;
  /** the whole body of a 2xx answer; the first `maxErrorBytes` of any other */
  body: Buffer;
}

/**
 * An answer refused for what it is rather than for a failing network: `message` is the operator's (it may name
 * the redirect's target), `publicText` says the same without a URL, for a tenant's eyes.
 */
export class FetchRefused extends Error {
  constructor(
    readonly kind: "redirect" | "too-large",
    message: string,
    readonly publicText: string,
  ) {
    super(message);
    this.name = "FetchRefused";
  }
}

/**
 * Makes the request and reads its answer within the bounds. Rejects with the platform's errors for the network
 * (undici's `TypeError("fetch failed")` with the cause), a `DOMException` named `TimeoutError` when `timeoutMs`
 * passes, `signal`'s reason when it aborts, and `FetchRefused` for a redirect or an oversized body. Any other
 * status is returned: what a 404 or a 503 means is the caller's to say.
 */
export async function boundedFetch(url: string, init: RequestInit, opts: BoundedFetchOptions): Promise<BoundedResponse> {
  // One timer covers the answer and the body. Not AbortSignal.timeout inside AbortSignal.any: in a long-lived
  // process that timeout was seen never to fire, leaving a fetch to a silent peer pending for good.
  const request = new AbortController();
  const outer = opts.signal;
  const stopped = () => request.abort(outer?.reason);
  if (outer?.aborted) stopped();
  const timer = setTimeout(() => request.abort(new DOMException("timed out", "TimeoutError")), opts.timeoutMs);
  outer?.addEventListener("abort", stopped, { once: true });
  try {
    const fetchImpl = opts.fetch;
    const res = await fetchImpl(url, {
      ...init,
      signal: request.signal,
      // Followed silently, a redirect would let whoever answers first (a captive portal, a hijacked host, an
      // https → http hop) answer for the service, or be handed a request's credentials. The services attestd
      // calls answer in place, so any 3xx is refused, whatever the target.
      redirect: "manual",
    });
    // 304 Not Modified is an answer, not a redirect: it points nowhere (Apple's receipt service says "nothing
    // newer yet" with it)
    if (res.type === "opaqueredirect" || (res.status >= 300 && res.status < 400 && res.status !== 304)) {
      await res.body?.cancel().catch(() => undefined);
      const to = res.headers.get("location");
      throw new FetchRefused("redirect", `redirect refused: HTTP ${res.status}${to ? ` to ${to}` : ""}`, `redirect refused: HTTP ${res.status}`);
    }
    const ok = res.status >= 200 && res.status < 300;
    const body = ok ? await readBody(res, opts.maxBytes) : await readExcerpt(res, opts.maxErrorBytes ?? 4096);
    return { status: res.status, headers: res.headers, body };
  } finally {
    clearTimeout(timer);
    outer?.removeEventListener("abort", stopped);
  }
}

async function readBody(res: Response, maxBytes: number): Promise<Buffer> {
  const declared = Number(res.headers.get("content-length") ?? "0");
  if (declared > maxBytes) {
    await res.body?.cancel().catch(() => undefined);
    throw new FetchRefused("too-large", `body of ${declared} bytes exceeds ${maxBytes}`, `body of ${declared} bytes exceeds ${maxBytes}`);
  }
  if (!res.body) return Buffer.alloc(0);
  // read in chunks: a body without (or lying about) content-length must not fill memory before the check
  const chunks: Buffer[] = [];
  let total = 0;
  const reader = res.body.getReader();
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    total += value.byteLength;
    if (total > maxBytes) {
      await reader.cancel().catch(() => undefined);
      throw new FetchRefused("too-large", `body exceeds ${maxBytes} bytes`, `body exceeds ${maxBytes} bytes`);
    }
    chunks.push(Buffer.from(value));
  }
  return Buffer.concat(chunks);
}

/** the first bytes of a body nobody needs whole; the rest is not waited for */
async function readExcerpt(res: Response, maxBytes: number): Promise<Buffer> {
  if (!res.body) return Buffer.alloc(0);
  const chunks: Buffer[] = [];
  let total = 0;
  const reader = res.body.getReader();
  while (total < maxBytes) {
    const { done, value } = await reader.read();
    if (done) return Buffer.concat(chunks);
    chunks.push(Buffer.from(value));
    total += value.byteLength;
  }
  await reader.cancel().catch(() => undefined);
  return Buffer.concat(chunks).subarray(0, maxBytes);
}
