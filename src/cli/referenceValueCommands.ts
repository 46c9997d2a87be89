import type { Command } from "commander";
import { parseReferenceValues } from "../attestation/policy/referenceValues.ts";
import type { ReferenceValue } from "../attestation/types.ts";
import { systemClock } from "../clock.ts";
import { ReferenceValueAdmin } from "../services/referenceValueAdmin.ts";
import type { Stores } from "../store/types.ts";
import { addSettings, CliError, configFrom, readFileOrFail, refusals, STORAGE_SETTINGS, tenantNamed, withOperator, withStores, type CommandDefinitions } from "./options.ts";

/** `attestd refvals import|list|delete` (operator.md). */
export const commands: CommandDefinitions = { refvals: defineRefvals };

function defineRefvals(refvals: Command): void {
  refvals.description("manage reference values: the global sets (every tenant) and a tenant's own (--tenant; they replace a global set of the same model and firmware for that tenant)");
  const refvalAdmin = (stores: Stores, fileValues: readonly ReferenceValue[] = []) => new ReferenceValueAdmin(stores.durable, systemClock, { fileValues });
  const scoped = async (stores: Stores, name: string | undefined) => (name === undefined ? undefined : tenantNamed(stores, name));
  addSettings(
    refvals
      .command("import <file>")
      .description('load reference values ([{"model","firmwareVersion","measurements":[hex...]}]); replaces same model+firmware; all or nothing')
      .option("--tenant <name>", "the tenant's own sets (default: the global sets)"),
    STORAGE_SETTINGS,
  ).action(async (file: string, opts: { tenant?: string }, cmd: Command) => {
    const text = readFileOrFail(file, "FILE", "reference values as JSON, like the reference-values.json attestd dev-ca writes").toString("utf8");
    await withOperator(cmd, async (stores, by) => {
      const tenant = await scoped(stores, opts.tenant);
      const n = await refusals(() => refvalAdmin(stores).import(text, file, tenant, by));
      process.stdout.write(JSON.stringify({ imported: n }) + "\n");
      process.stderr.write(
        `${n} reference value set(s) imported${tenant ? ` for tenant ${tenant.name}` : ""}; running servers pick them up within 10 s\n`,
      );
    });
  });
  addSettings(
    refvals
      .command("list")
      .description("print the global sets (with those of --reference-values, source \"file\"), or a tenant's own, as JSON")
      .option("--tenant <name>", "the tenant's own sets"),
    [...STORAGE_SETTINGS, "referenceValues"],
  ).action(async (opts: { tenant?: string }, cmd: Command) => {
    const config = configFrom(cmd);
    let fileValues: ReferenceValue[] = [];
    if (opts.tenant === undefined && config.referenceValues) {
      const text = readFileOrFail(config.referenceValues, "--reference-values FILE").toString("utf8");
      try {
        fileValues = parseReferenceValues(text, `--reference-values ${config.referenceValues}`);
      } catch (e) {
        throw new CliError((e as Error).message);
      }
    }
    await withStores(cmd, async (stores) => {
      const tenant = await scoped(stores, opts.tenant);
      const stored = (await refvalAdmin(stores).all(tenant)).map(({ tenantId: _id, ...s }) => ({ source: tenant ? "tenant" : "global", ...s }));
      const fromFile = fileValues.map((v) => ({ source: "file", ...v, updatedAt: null }));
      process.stdout.write(JSON.stringify([...fromFile, ...stored], null, 2) + "\n");
    });
  });
  addSettings(
    refvals
      .command("delete")
      .description("delete one set; devices of that model and firmware appraise Unknown unless another set applies")
      .requiredOption("--model <model>", "the set's model")
      .requiredOption("--firmware <version>", "the set's firmwareVersion")
      .option("--tenant <name>", "one of the tenant's own sets (default: a global set)"),
    STORAGE_SETTINGS,
  ).action(async (opts: { model: string; firmware: string; tenant?: string }, cmd: Command) => {
    await withOperator(cmd, async (stores, by) => {
      const tenant = await scoped(stores, opts.tenant);
      if (!(await refvalAdmin(stores).remove(tenant, opts.model, opts.firmware, by))) {
        throw new CliError(`no ${tenant ? `set of tenant ${tenant.name}` : "global set"} for model ${JSON.stringify(opts.model)}, firmware ${JSON.stringify(opts.firmware)}`);
      }
      process.stderr.write(`deleted; running servers pick it up within 10 s\n`);
    });
  });
}
