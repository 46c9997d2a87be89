import type { FastifyBaseLogger } from "fastify";
import { createRequire } from "node:module";
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

export function createLogger(opts: LoggerOptions): FastifyBaseLogger {
  const pino = require("pino") as typeof pinoModule;
  const fd = opts.fd ?? 1;
  const options = { level: opts.level, base: { service: "attestd", pid: process.pid } };
  if (resolveLogFormat(opts.format ?? "auto", isTerminal(fd)) === "pretty") {
    // A synchronous stream in this thread rather than pino's worker transport: a start-up failure's last line
    // is written before the process exits, and a terminal is never the bottleneck that async writing avoids.
    const pinoPretty = require("pino-pretty") as typeof pinoPrettyModule;
    const stream = pinoPretty({
      destination: fd,
      sync: true,
      colorize: isTerminal(fd),
      translateTime: "SYS:HH:MM:ss.l",
      ignore: "pid,hostname,service",
      singleLine: false,
    });
    return pino(options, stream) as unknown as FastifyBaseLogger;
  }
  return (fd === 1 ? pino(options) : pino(options, pino.destination({ fd: 2, sync: true }))) as unknown as FastifyBaseLogger;
}

/** True when the logger writes for a person: the start-up banner is printed only then. */
export function logsArePretty(format: LogFormat, fd: 1 | 2 = 1): boolean {
  return resolveLogFormat(format, isTerminal(fd)) === "pretty";
}
