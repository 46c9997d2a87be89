import { OperatorError } from "../errors/operatorError.ts";
import { appendFile } from "node:fs/promises";
import { createSocket, type Socket as UdpSocket } from "node:dgram";
import { connect, type Socket } from "node:net";
import { hostname } from "node:os";
import type { AuditRecord } from "../domain/audit.ts";
import type { AuditSink } from "./auditTrail.ts";

/** records queued for one sink at most; past it a record is a failure, never a wait */
export const MAX_SINK_QUEUE = 10_000;

/** One JSON line per record, appended to a file (`--audit-file`), in order; the file is opened for each batch. */
export class AuditFileSink implements AuditSink {
  readonly name = "file";
  private queue: { line: string; onFailure: (err: unknown) => void }[] = [];
  private writing: Promise<void> | undefined;

  constructor(private readonly file: string) {}

  send(record: AuditRecord, onFailure: (err: unknown) => void): void {
    if (this.queue.length >= MAX_SINK_QUEUE) return onFailure(new Error(`more than ${MAX_SINK_QUEUE} audit records waiting for ${this.file}`));
    this.queue.push({ line: JSON.stringify(record) + "\n", onFailure });
    this.writing ??= this.drain();
  }

  private async drain(): Promise<void> {
    while (this.queue.length > 0) {
      const batch = this.queue;
      this.queue = [];
      try {
        await appendFile(this.file, batch.map((b) => b.line).join(""), { mode: 0o600 });
      } catch (err) {
        for (const b of batch) b.onFailure(err);
      }
    }
    this.writing = undefined;
  }

  async close(): Promise<void> {
    await this.writing;
  }
}

/** RFC 5424 facility "log audit" (13), severity "notice" (5). */
const PRI = 13 * 8 + 5;

/**
 * One RFC 5424 line per record: `<109>1 TIME HOST attestd PID ACTION - JSON`, the action as MSGID and the record as
 * the message.
 */
export function syslogLine(record: AuditRecord, host = hostname()): string {
  const msgId = record.action.replace(/[^\x21-\x7e]/g, "_").slice(0, 32) || "-";
  const host255 = host.replace(/[^\x21-\x7e]/g, "_").slice(0, 255) || "-";
  return `<${PRI}>1 ${record.time} ${host255} attestd ${process.pid} ${msgId} - ${JSON.stringify(record)}`;
}

/**
 * Syslog (`--audit-syslog`): `udp://HOST:PORT` sends each line as one datagram; a path (or `unix:PATH`) is a unix
 * stream socket, each line ended by a newline (RFC 6587 non-transparent framing), reconnected at the next record
 * after a failure. Nothing waits for the receiver.
 */
export class AuditSyslogSink implements AuditSink {
  readonly name = "syslog";
  private udp: UdpSocket | undefined;
  private stream: Socket | undefined;
  private readonly target: { kind: "udp"; host: string; port: number } | { kind: "unix"; path: string };

  constructor(target: string) {
    this.target = parseSyslogTarget(target);
  }

  send(record: AuditRecord, onFailure: (err: unknown) => void): void {
    const line = syslogLine(record);
    if (this.target.kind === "udp") {
      if (!this.udp) {
        this.udp = createSocket(this.target.host.includes(":") ? "udp6" : "udp4");
        this.udp.on("error", () => {});
        this.udp.unref();
      }
      this.udp.send(line, this.target.port, this.target.host, (err) => {
        if (err) onFailure(err);
      });
      return;
    }
    if (!this.stream || this.stream.destroyed) {
      const s = connect(this.target.path);
      // a write in flight when the socket fails gets the error in its own callback (counted there, once)
      s.on("error", () => s.destroy());
      s.unref();
      this.stream = s;
    }
    if (this.stream.writableLength > 1 << 20) return onFailure(new Error("syslog socket is not keeping up"));
    this.stream.write(line + "\n", (err) => {
      if (err) onFailure(err);
    });
  }

  async close(): Promise<void> {
    const udp = this.udp;
    if (udp) await new Promise<void>((r) => udp.close(() => r()));
    const s = this.stream;
    if (s && !s.destroyed) await new Promise<void>((r) => s.end(() => r()));
  }
}

/** `udp://HOST:PORT` (IPv6 in brackets) or a unix socket path (`/dev/...`, `unix:PATH`); throws on anything else. */
export function parseSyslogTarget(target: string): { kind: "udp"; host: string; port: number } | { kind: "unix"; path: string } {
  if (target.startsWith("udp://")) {
    const u = new URL(target);
    const port = Number(u.port || "514");
    if (!u.hostname || !Number.isInteger(port) || port < 1 || port > 65535) throw new OperatorError(`--audit-syslog ${target}: expected udp://HOST:PORT`);
    return { kind: "udp", host: u.hostname.replace(/^\[|\]$/g, ""), port };
  }
  if (target.startsWith("unix:")) return { kind: "unix", path: target.slice("unix:".length).replace(/^\/\/(?=\/)/, "") };
  if (target.startsWith("/")) return { kind: "unix", path: target };
  throw new OperatorError(`--audit-syslog ${target}: expected udp://HOST:PORT or a unix socket path`);
}

/** The sinks the configuration asks for (`--audit-file`, `--audit-syslog`), for serve and the CLI alike. */
export function auditSinks(config: { auditFile?: string | undefined; auditSyslog?: string | undefined }): AuditSink[] {
  const sinks: AuditSink[] = [];
  if (config.auditFile) sinks.push(new AuditFileSink(config.auditFile));
  if (config.auditSyslog) sinks.push(new AuditSyslogSink(config.auditSyslog));
  return sinks;
}
