import net from "node:net";

/**
 * A TCP forwarder the tests control, standing between attestd and PostgreSQL or Redis, to cut the backend off for
 * real without stopping the shared service:
 *  - close(): refuse new connections and reset the open ones (the backend is down);
 *  - hang(): keep connections open but deliver nothing, in either direction (a network that swallows packets);
 *  - open(): forward again on the same port (the backend is back). Bytes held during a hang are delivered, so the
 *    protocol streams stay aligned as after a slow network.
 */
export class TcpProxy {
  private server: net.Server | undefined;
  private readonly pairs = new Set<{ client: net.Socket; upstream: net.Socket }>();
  private hanging = false;
  private readonly held: { to: net.Socket; data: Buffer }[] = [];
  /** connections accepted so far */
  accepted = 0;
  private openAtConnection: number | undefined;
  port = 0;

  private constructor(
    private readonly targetHost: string,
    private readonly targetPort: number,
  ) {}

  static async start(target: string): Promise<TcpProxy> {
    const u = new URL(target);
    const p = new TcpProxy(u.hostname, Number(u.port));
    await p.open();
    return p;
  }

  /** the target URL with host and port replaced by the proxy's */
  url(target: string): string {
    const u = new URL(target);
    u.hostname = "127.0.0.1";
    u.port = String(this.port);
    return u.toString();
  }

  async open(): Promise<void> {
    this.hanging = false;
    for (const h of this.held.splice(0)) if (!h.to.destroyed) h.to.write(h.data);
    if (this.server) return;
    const server = net.createServer((client) => this.accept(client));
    await new Promise<void>((resolve, reject) => {
      server.once("error", reject);
      server.listen(this.port, "127.0.0.1", () => resolve());
    });
    this.port = (server.address() as net.AddressInfo).port;
    this.server = server;
  }

  hang(): void {
    this.hanging = true;
  }

  /**
   * hang() until the n-th connection since the start arrives, then forward: a backend that answers a client's
   * attempt n and not the ones before, however long each took
   */
  hangUntilConnection(n: number): void {
    this.hanging = true;
    this.openAtConnection = n;
  }

  async close(): Promise<void> {
    const server = this.server;
    this.server = undefined;
    this.held.length = 0;
    for (const { client, upstream } of this.pairs) {
      client.resetAndDestroy();
      upstream.destroy();
    }
    this.pairs.clear();
    if (server) await new Promise<void>((resolve) => server.close(() => resolve()));
  }

  private accept(client: net.Socket): void {
    this.accepted++;
    if (this.openAtConnection !== undefined && this.accepted >= this.openAtConnection) {
      this.openAtConnection = undefined;
      void this.open();
    }
    const upstream = net.connect(this.targetPort, this.targetHost);
    const pair = { client, upstream };
    this.pairs.add(pair);
    const relay = (from: net.Socket, to: net.Socket) =>
      from.on("data", (data) => {
        if (this.hanging) this.held.push({ to, data });
        else to.write(data);
      });
    relay(client, upstream);
    relay(upstream, client);
    const end = () => {
      this.pairs.delete(pair);
      client.destroy();
      upstream.destroy();
    };
    client.on("close", end).on("error", end);
    upstream.on("close", end).on("error", end);
  }
}
