import type { Command } from "commander";
import { existsSync } from "node:fs";
import path from "node:path";
import { appraise as appraiseBlob } from "../attestation/appraise.ts";
import { systemClock } from "../clock.ts";
import { isAppError } from "../errors/AppError.ts";
import { partAErrorBody } from "../http/render.ts";
import { createLogger, type LogFormat } from "../logging.ts";
import { openStores } from "../store/openStores.ts";
import { openTrust } from "../trust/openTrust.ts";
import { addSettings, CliError, configFrom, readFileOrFail, STORAGE_SETTINGS, TRUST_SETTINGS, type CommandDefinitions } from "./options.ts";

/** `attestd appraise` (operator.md): one blob appraised offline, with the trust flags `serve` takes. */
export const commands: CommandDefinitions = { appraise: defineAppraise };

/**
 * The nonce string whose challenge bytes are `bytes`: base64url for the 32-byte challenges this service issues,
 * else the bytes as a latin1 string, which is what the appraisal compares for challenges apps pass as text
 * (and round-trips any byte string, e.g. the "challenge" or UUID challenges of Google's test chains).
 */
export function nonceForChallenge(bytes: Buffer): string {
  return bytes.length === 32 ? bytes.toString("base64url") : bytes.toString("latin1");
}

function defineAppraise(appraise: Command): void {
  addSettings(
    appraise
      .argument("<file>")
      .description("appraise one blob offline with the same trust flags as serve; prints the verdict record")
      .option("--nonce <nonce>", "the nonce the blob should carry")
      .option("--challenge-hex <hex>", "the challenge bytes the blob should carry, as hex")
      .option("--at <iso8601>", "appraisal time (default now)")
      .option("--detail", "print the format, the deciding rule, the full parsed attestation and the pinnable device facts too")
      .option("--tenant <name>", "appraise as this tenant: its own reference values and its android-key policy from --android-policy"),
    [...TRUST_SETTINGS, ...STORAGE_SETTINGS],
  ).action(async (file: string, opts: { nonce?: string; challengeHex?: string; at?: string; detail?: boolean; tenant?: string }, cmd: Command) => {
    if ((opts.nonce === undefined) === (opts.challengeHex === undefined)) {
      throw new CliError("give exactly one of --nonce or --challenge-hex");
    }
    if (opts.challengeHex !== undefined && !/^([0-9a-fA-F]{2})+$/.test(opts.challengeHex)) {
      throw new CliError("--challenge-hex must be an even number of hex digits");
    }
    const now = opts.at === undefined ? new Date() : new Date(opts.at);
    if (Number.isNaN(now.getTime())) throw new CliError(`--at ${opts.at}: not an ISO 8601 time`);
    const nonce = opts.nonce ?? nonceForChallenge(Buffer.from(opts.challengeHex!, "hex"));
    const blob = readFileOrFail(file, "blob");
    const config = configFrom(cmd);
    const log = createLogger({ level: config.logLevel === "info" ? "warn" : config.logLevel, format: config.logFormat as LogFormat, fd: 2 });
    const useStore = config.store !== "sqlite" || existsSync(path.join(config.dataDir, "attestd.sqlite"));
    const stores = useStore ? await openStores(config) : undefined;
    try {
      const sources = await openTrust(config, { log, clock: systemClock, serving: false, ...(stores ? { referenceValues: stores.durable } : {}) });
      if (opts.tenant !== undefined && !sources.hasTenantPolicy(opts.tenant)) {
        process.stderr.write(`no policy for tenant "${opts.tenant}" in --android-policy; using the default\n`);
      }
      const tenant = opts.tenant !== undefined && stores ? await stores.durable.getTenantByName(opts.tenant) : undefined;
      if (opts.tenant !== undefined && !tenant) {
        process.stderr.write(`no tenant "${opts.tenant}" in the store; its own reference values (if any) are not applied\n`);
      }
      const trust = sources.forTenant({ name: opts.tenant ?? "", tenantId: tenant?.tenantId ?? "" });
      try {
        const r = appraiseBlob({ blob, nonce, trust, now });
        // with --detail also the facts a relying party's deviceId would pin (docs/devices.md), null when unauthenticated
        const out = opts.detail ? { record: r.record, format: r.format, reason: r.reason, detail: r.detail, facts: r.facts ?? null } : r.record;
        process.stdout.write(JSON.stringify(out, null, 2) + "\n");
      } catch (e) {
        if (!isAppError(e)) throw e;
        process.stdout.write(JSON.stringify(partAErrorBody(e.entry, e.reason), null, 2) + "\n");
        process.exitCode = 2;
      }
    } finally {
      await stores?.close();
    }
  });
}
