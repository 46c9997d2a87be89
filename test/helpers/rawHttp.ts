import net from "node:net";

/**
 * HTTP/1.1 written by hand on a TCP socket, for what no HTTP client sends: a body that stops half-way, headers
 * that never end, a request line that is not HTTP, several connections held open from one address. The server's
 * side is observed as a client sees it: the bytes it sent and whether it closed the connection.
 */
export interface RawConnection {
  socket: net.Socket;
  /** everything the server sent so far */
  received(): string;
  /** resolves when the server has closed the connection (or it was reset), with everything it sent */
  closed: Promise<string>;
  /** the first response, parsed from what was received; undefined if there is none (yet) */
  response(): RawResponse | undefined;
}

export interface RawResponse {
  status: number;
  headers: Record<string, string>;
  body: string;
  json(): any;
}

/** Opens a connection to 127.0.0.1:`port` (from `localAddress`, e.g. 127.0.0.2, when given) and writes `data`. */
export function rawConnect(port: number, data?: string | Buffer, opts: { localAddress?: string } = {}): Promise<RawConnection> {
  return new Promise((resolve, reject) => {
    const socket = net.connect({ port, host: "127.0.0.1", ...(opts.localAddress ? { localAddress: opts.localAddress } : {}) });
    const chunks: Buffer[] = [];
    socket.on("data", (c: Buffer) => chunks.push(c));
    const received = () => Buffer.concat(chunks).toString("latin1");
    const closed = new Promise<string>((done) => socket.once("close", () => done(received())));
    // a reset by the server is one way of closing; the test reads `closed`
    socket.on("error", () => {});
    socket.once("connect", () => {
      if (data !== undefined) socket.write(data);
      resolve({ socket, received, closed, response: () => parseResponse(received()) });
    });
    socket.once("error", reject);
  });
}

/** The first HTTP response in `text` (Content-Length framed), or undefined when it is not complete. */
export function parseResponse(text: string): RawResponse | undefined {
  const end = text.indexOf("\r\n\r\n");
  if (end < 0) return undefined;
  const [statusLine, ...lines] = text.slice(0, end).split("\r\n");
  const status = Number(/^HTTP\/1\.1 (\d{3})/.exec(statusLine!)?.[1]);
  const headers: Record<string, string> = {};
  for (const l of lines) {
    const i = l.indexOf(":");
    headers[l.slice(0, i).trim().toLowerCase()] = l.slice(i + 1).trim();
  }
  const length = Number(headers["content-length"] ?? 0);
  const bodyBytes = Buffer.from(text.slice(end + 4), "latin1");
  if (bodyBytes.length < length) return undefined;
  const body = bodyBytes.subarray(0, length).toString("utf8");
  return { status, headers, body, json: () => JSON.parse(body) };
}

/**
 * Resolves with what the server sent once it has closed `c`; fails if it is still open after `ms` (a bound on the
 * wait, so a server that never closes fails the test instead of hanging it, not a timing assertion).
 */
export function serverClosed(c: RawConnection, what: string, ms = 20_000): Promise<string> {
  let timer: NodeJS.Timeout;
  return Promise.race([
    c.closed.finally(() => clearTimeout(timer)),
    new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`${what}: still open after ${ms} ms`)), ms);
    }),
  ]);
}
