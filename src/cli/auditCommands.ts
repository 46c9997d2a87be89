import { Command, Option } from "commander";
import { createWriteStream } from "node:fs";
import { once } from "node:events";
import { AuditReader, MAX_AUDIT_EXPORT, type AuditView } from "../services/auditReader.ts";
import { addSettings, CliError, refusals, STORAGE_SETTINGS, tenantNamed, withStores, type CommandDefinitions } from "./options.ts";

/** `attestd audit list` and `attestd audit export` (docs/audit.md): the audit trail, every tenant's or one's. */
export const commands: CommandDefinitions = { audit: defineAudit };

interface FilterOptions {
  tenant?: string;
  from?: string;
  to?: string;
  actor?: string;
  action?: string;
  target?: string;
}

function filters(cmd: Command): Command {
  return cmd
    .option("--tenant <name>", "one tenant's records (default: every record, operator-wide ones included)")
    .option("--from <time>", "records at or after this time (ISO 8601 or a date, UTC)")
    .option("--to <time>", "records before this time")
    .option("--actor <kind-or-id>", "user, api-client, operator or system; or an actor's id (a portal user id, a client id, an OS user)")
    .option("--action <name>", "an action (key.revoked) or a family (key.*)")
    .option("--target <kind[:id]>", "a target kind (api-key), or kind and id (api-key:KEYID)");
}

function viewOf(o: FilterOptions): AuditView {
  const v: AuditView = {};
  for (const k of ["from", "to", "actor", "action", "target"] as const) if (o[k] !== undefined && o[k] !== "") v[k] = o[k];
  return v;
}

function defineAudit(audit: Command): void {
  addSettings(
    filters(audit.command("list").description("print audit records, newest first, as JSON")).addOption(
      new Option("--limit <n>", "at most this many (1-1000)").default("100"),
    ),
    STORAGE_SETTINGS,
  ).action(async (o: FilterOptions & { limit: string }, cmd: Command) => {
    const limit = Number(o.limit);
    if (!Number.isInteger(limit) || limit < 1 || limit > 1000) throw new CliError("--limit must be a whole number from 1 to 1000");
    await withStores(cmd, async (stores) => {
      const tenantId = o.tenant ? (await tenantNamed(stores, o.tenant)).tenantId : undefined;
      const trail = new AuditReader(stores.durable);
      const page = await refusals(() => trail.page(tenantId, viewOf(o), undefined, limit));
      process.stdout.write(JSON.stringify(page.items, null, 2) + "\n");
    });
  });

  addSettings(
    filters(audit.command("export").description(`write audit records, newest first, as JSON lines (one record per line; at most ${MAX_AUDIT_EXPORT})`)).option(
      "--out <file>",
      "write them to FILE (made 0600) instead of stdout",
    ),
    STORAGE_SETTINGS,
  ).action(async (o: FilterOptions & { out?: string }, cmd: Command) => {
    await withStores(cmd, async (stores) => {
      const tenantId = o.tenant ? (await tenantNamed(stores, o.tenant)).tenantId : undefined;
      const trail = new AuditReader(stores.durable);
      const lines = trail.exportLines(tenantId, viewOf(o));
      // the filter is checked at the first page, before a file is made
      const first = await refusals(() => lines.next());
      const out = o.out ? createWriteStream(o.out, { flags: "wx", mode: 0o600 }) : process.stdout;
      if (o.out) await once(out, "open").catch((e: unknown) => {
        throw new CliError(`--out ${o.out}: ${(e as Error).message}`);
      });
      let n = 0;
      const write = async (chunk: string) => {
        n += chunk.split("\n").length - 1;
        if (!out.write(chunk)) await once(out, "drain");
      };
      if (!first.done) await write(first.value);
      for await (const chunk of lines) await write(chunk);
      if (o.out) {
        await new Promise<void>((resolve, reject) => (out as ReturnType<typeof createWriteStream>).end((err?: Error | null) => (err ? reject(err) : resolve())));
        process.stderr.write(`${n} audit records written to ${o.out}\n`);
      }
    });
  });
}
