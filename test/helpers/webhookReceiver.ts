import { createHmac, timingSafeEqual } from "node:crypto";
import http from "node:http";
import type { AddressInfo } from "node:net";

/**
 * A webhook receiver for tests, on 127.0.0.1: it checks each request's Standard Webhooks signature with its own
 * implementation (node:crypto, written from the specification, not attestd's code) and keeps what it received.
 * It can be taken down (the port closed: connection refused) and brought back on the same port, made slow, or made
 * to answer an error status.
 */
export interface ReceivedWebhook {
  id: string;
  timestamp: number;
  signatures: string[];
  /** whether one of the signatures verifies with one of the receiver's secrets */
  verified: boolean;
  body: string;
  json: { type: string; timestamp: string; data: Record<string, unknown> };
}

/** The specification's check: base64 HMAC-SHA256, keyed by the secret's decoded bytes, of "id.timestamp.body". */
export function verifyStandardWebhook(secret: string, id: string, timestamp: string, body: string, signatureHeader: string): boolean {
  const key = Buffer.from(secret.replace(/^whsec_/, ""), "base64");
  const expected = createHmac("sha256", key).update(`${id}.${timestamp}.${body}`).digest();
  for (const part of signatureHeader.split(" ")) {
    const [version, sig] = part.split(",");
    if (version !== "v1" || !sig) continue;
    const got = Buffer.from(sig, "base64");
    if (got.length === expected.length && timingSafeEqual(got, expected)) return true;
  }
  return false;
}

export class WebhookReceiver {
  readonly received: ReceivedWebhook[] = [];
  secrets: string[] = [];
  /** ms before answering */
  delayMs = 0;
  status = 200;
  /** a Retry-After header on the answer, when set */
  retryAfter: string | undefined;
  private server: http.Server | undefined;
  private port = 0;
  private readonly sockets = new Set<import("node:net").Socket>();

  static async start(): Promise<WebhookReceiver> {
    const r = new WebhookReceiver();
    await r.up();
    return r;
  }

  get url(): string {
    return `http://127.0.0.1:${this.port}/hook`;
  }

  async up(): Promise<void> {
    const server = http.createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on("data", (c: Buffer) => chunks.push(c));
      req.on("end", () => {
        const body = Buffer.concat(chunks).toString("utf8");
        const id = String(req.headers["webhook-id"] ?? "");
        const ts = String(req.headers["webhook-timestamp"] ?? "");
        const sig = String(req.headers["webhook-signature"] ?? "");
        const answer = () => {
          if (res.destroyed) return;
          this.received.push({
            id,
            timestamp: Number(ts),
            signatures: sig.split(" "),
            verified: this.secrets.some((s) => verifyStandardWebhook(s, id, ts, body, sig)),
            body,
            json: JSON.parse(body),
          });
          res.writeHead(this.status, { "content-type": "text/plain", ...(this.retryAfter ? { "retry-after": this.retryAfter } : {}) }).end(this.status < 300 ? "thanks" : "not now");
        };
        if (this.delayMs > 0) setTimeout(answer, this.delayMs);
        else answer();
      });
    });
    server.on("connection", (s) => {
      this.sockets.add(s);
      s.on("close", () => this.sockets.delete(s));
    });
    await new Promise<void>((resolve) => server.listen(this.port, "127.0.0.1", resolve));
    this.port = (server.address() as AddressInfo).port;
    this.server = server;
  }

  /** the port closed: a delivery meets connection refused */
  async down(): Promise<void> {
    const s = this.server;
    this.server = undefined;
    for (const sock of this.sockets) sock.destroy();
    if (s) await new Promise<void>((resolve) => s.close(() => resolve()));
  }

  /** distinct events received (by webhook-id), each once however many times it came */
  ids(): string[] {
    return [...new Set(this.received.map((r) => r.id))];
  }

  async waitFor(n: number, timeoutMs = 10_000): Promise<void> {
    const end = Date.now() + timeoutMs;
    while (this.received.length < n) {
      if (Date.now() > end) throw new Error(`received ${this.received.length} webhooks, waited for ${n}`);
      await new Promise((r) => setTimeout(r, 20));
    }
  }

  async close(): Promise<void> {
    await this.down();
  }
}
