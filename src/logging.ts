import type { FastifyBaseLogger } from "fastify";
import { writeSync } from "node:fs";
import { createRequire } from "node:module";
import { Writable } from "node:stream";
import type pinoModule from "pino";
import type pinoPrettyModule from "pino-pretty";

// pino and pino-pretty are loaded when the first logger is made, not when this module is: the settings table
// (config.ts) reads LOG_FORMATS here, and `attestd --help` or a store command must not pay for a logger it never
// makes.
const require = createRequire(import.meta.url);

export const LOG_FORMATS = ["auto", "pretty", "json"] as const;
export type LogFormat = (typeof LOG_FORMATS)[number];

export interface LoggerOptions {
  level: string;
  /** `auto` is pretty when the destination is a terminal, JSON otherwise (a pipe, a file, a collector) */
  format?: LogFormat;
  /**
   * The service logs to stdout; a CLI command whose stdout is its result (`attestd appraise`) passes fd 2, so a
   * warning never lands in front of the JSON a script reads.
   */
  fd?: 1 | 2;
}

/** What `auto` resolves to for a destination: a person reads a terminal, a machine reads everything else. */
export function resolveLogFormat(format: LogFormat, isTerminal: boolean): "pretty" | "json" {
  if (format === "auto") return isTerminal ? "pretty" : "json";
  return format;
}

function isTerminal(fd: 1 | 2): boolean {
  return Boolean((fd === 1 ? process.stdout : process.stderr).isTTY);
}

/** what a destination keeps in memory while its reader does not keep up (a pipe answering EAGAIN) */
const BACKLOG_MAX_BYTES = 1024 * 1024;
/** the pause before a backlog is tried again */
const BACKLOG_RETRY_MS = 50;

const NEWLINE = Buffer.from("\n");

/** Log lines given up on, by reason (an errno code, or `backlog` when a stalled reader's backlog was full), process-wide. */
const droppedLines = new Map<string, number>();

/** `attestd_log_lines_dropped_total`: every log line this process could not write, by reason. */
export function droppedLogLines(): ReadonlyMap<string, number> {
  return droppedLines;
}

const destinations = new Set<LogDestination>();

/**
 * Where the log's lines go, in place of pino's own destination (SonicBoom). On a full disk SonicBoom emitted an
 * unhandled 'error' and then, flushing at exit, retried the write in a synchronous sleep loop forever
 * (`Atomics.wait`): the process hung with its port bound, answering nothing, ignoring SIGTERM. On a pipe nobody
 * reads it kept every line in memory, or, in sync mode, slept in the same loop. Logging must never take the service
 * down, so here a line is written at once with one `write(2)` and never waited for:
 *
 * - a write that fails (ENOSPC, EIO, EPIPE, ...) drops its line, counted by errno in `droppedLogLines`; when the
 *   cause goes away the next line is written as if nothing happened (after a newline, if a line was cut short);
 * - a reader that does not keep up (EAGAIN, or a partial write, on a non-blocking pipe) gets the rest from a
 *   backlog in memory, retried from a timer; past BACKLOG_MAX_BYTES new lines are dropped (`backlog`);
 * - at exit the backlog gets one more try and what is left is dropped: exit never waits for the reader.
 *
 * A Writable, because pino-pretty pipes into one; its write is synchronous and never fails.
 */
export class LogDestination extends Writable {
  private backlog: Buffer[] = [];
  private backlogBytes = 0;
  private retry: NodeJS.Timeout | undefined;
  /** the last line was cut short: the next write starts on a new line */
  private cut = false;

  constructor(readonly fd: number) {
    super({ decodeStrings: false });
    // Node makes a pipe on stdout or stderr non-blocking once that stream is first touched (libuv); a blocking pipe
    // whose reader stalled would block the event loop in write(2) instead of answering EAGAIN.
    if (fd === 1) void process.stdout.writable;
    if (fd === 2) void process.stderr.writable;
    if (destinations.size === 0) process.once("exit", () => destinations.forEach((d) => d.lastTry()));
    destinations.add(this);
  }

  override _write(chunk: Buffer | string, _encoding: BufferEncoding, done: (error?: Error | null) => void): void {
    this.line(typeof chunk === "string" ? Buffer.from(chunk) : chunk);
    done();
  }

  private line(data: Buffer): void {
    if (this.backlog.length > 0) void this.queue(data);
    else this.put(data);
  }

  /** Writes `data` now as far as the fd takes it; the rest goes to the backlog (EAGAIN) or is dropped (any other error). */
  private put(data: Buffer): void {
    if (this.cut) {
      this.cut = false;
      data = Buffer.concat([NEWLINE, data]);
    }
    let written = 0;
    while (written < data.length) {
      try {
        written += writeSync(this.fd, data, written);
      } catch (err) {
        const code = (err as NodeJS.ErrnoException).code ?? "error";
        const kept = (code === "EAGAIN" || code === "EWOULDBLOCK") && this.queue(data.subarray(written));
        if (!kept) {
          if (code !== "EAGAIN" && code !== "EWOULDBLOCK") this.drop(code);
          if (written > 0) this.cut = true;
        }
        return;
      }
    }
  }

  /** Keeps `data` for the retry timer; false (and counted) when the backlog is full and it was dropped instead. */
  private queue(data: Buffer): boolean {
    if (this.backlogBytes + data.length > BACKLOG_MAX_BYTES) {
      this.drop("backlog");
      return false;
    }
    this.backlog.push(data);
    this.backlogBytes += data.length;
    // unref'd: a log line must never keep the process alive
    this.retry ??= setTimeout(() => this.drain(), BACKLOG_RETRY_MS).unref();
    return true;
  }

  private drain(): void {
    this.retry = undefined;
    const pending = this.backlog;
    this.backlog = [];
    this.backlogBytes = 0;
    for (const data of pending) {
      if (this.backlog.length > 0) void this.queue(data);
      else this.put(data);
    }
  }

  /** At exit: one more try for the backlog, and whatever the reader does not take now is left behind. */
  lastTry(): void {
    if (this.retry) clearTimeout(this.retry);
    this.retry = undefined;
    const pending = this.backlog;
    this.backlog = [];
    this.backlogBytes = 0;
    for (const data of pending) {
      if (this.backlog.length > 0) break; // EAGAIN again: the reader is not taking any
      this.put(data);
    }
  }

  private drop(reason: string): void {
    droppedLines.set(reason, (droppedLines.get(reason) ?? 0) + 1);
  }
}

const standard = new Map<1 | 2, LogDestination>();

/**
 * The one destination of stdout (or stderr): every logger of the process and the start-up banner share it, so
 * their lines keep their order and one backlog holds what a stalled reader has not taken.
 */
export function logDestination(fd: 1 | 2): LogDestination {
  let d = standard.get(fd);
  if (!d) standard.set(fd, (d = new LogDestination(fd)));
  return d;
}

export function createLogger(opts: LoggerOptions): FastifyBaseLogger {
  const pino = require("pino") as typeof pinoModule;
  const fd = opts.fd ?? 1;
  const options = { level: opts.level, base: { service: "attestd", pid: process.pid } };
  const destination = logDestination(fd);
  if (resolveLogFormat(opts.format ?? "auto", isTerminal(fd)) === "pretty") {
    // In this thread rather than pino's worker transport: a start-up failure's last line is written before the
    // process exits, and a terminal is never the bottleneck that a worker avoids.
    const pinoPretty = require("pino-pretty") as typeof pinoPrettyModule;
    const stream = pinoPretty({
      destination,
      colorize: isTerminal(fd),
      translateTime: "SYS:HH:MM:ss.l",
      ignore: "pid,hostname,service",
      singleLine: false,
    });
    return pino(options, stream) as unknown as FastifyBaseLogger;
  }
  return pino(options, destination) as unknown as FastifyBaseLogger;
}

/** True when the logger writes for a person: the start-up banner is printed only then. */
export function logsArePretty(format: LogFormat, fd: 1 | 2 = 1): boolean {
  return resolveLogFormat(format, isTerminal(fd)) === "pretty";
}
