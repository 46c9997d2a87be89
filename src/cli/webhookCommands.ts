import { Command } from "commander";
import { cryptoRng, systemClock } from "../clock.ts";
import type { Config } from "../config.ts";
import type { Tenant } from "../domain/tenants.ts";
import { deliveryDetailView, deliveryView, WEBHOOK_EVENT_TYPES } from "../domain/webhooks.ts";
import { openSecrets } from "../secrets/openSecrets.ts";
import { DEFAULT_ROTATION_OVERLAP_S, WEBHOOK_CACHE_MS, WebhookPlanner, WebhookRegistry } from "../services/webhooks.ts";
import type { SettingName } from "../config.ts";
import type { Stores } from "../store/types.ts";
import type { ChangeActor } from "../services/auditTrail.ts";
import { addSettings, CliError, refusals, STORAGE_SETTINGS, tenantNamed, withOperator, type CommandDefinitions } from "./options.ts";

/** `attestd webhook add|list|update|rotate|remove|deliveries|show|resend` (docs/events.md): the same WebhookRegistry as the portal. */
export const commands: CommandDefinitions = { webhook: defineWebhook };

/** the storage settings, and what a URL is checked against (as `serve` checks it) */
const WEBHOOK_SETTINGS: SettingName[] = [...STORAGE_SETTINGS, "webhookAllowPrivate", "webhookAllowHosts", "webhookAllowHttp", "webhookRetryPeriod"];

/** the storage settings, and how long an event's deliveries are retried (as `serve` retries the ones it writes) */
export const EVENT_WRITING_SETTINGS: SettingName[] = [...STORAGE_SETTINGS, "webhookRetryPeriod"];

/**
 * What a CLI command that changes state writes to the outbox with its change (key.created, key.revoked,
 * device.pin.changed), with the same --webhook-retry-period as the server: an operator who set it (flag, env or
 * config file) gets it for these events too.
 */
export function webhookPlannerFor(stores: Stores, config: Config): WebhookPlanner {
  return new WebhookPlanner(stores.durable, systemClock, cryptoRng, { retryPeriodMs: config.webhookRetryPeriod * 1000 });
}

function webhookRegistryFor(stores: Stores, config: Config, box: ConstructorParameters<typeof WebhookRegistry>[3]): WebhookRegistry {
  return new WebhookRegistry(stores.durable, systemClock, cryptoRng, box, {
    targets: { allowPrivate: config.webhookAllowPrivate === true, allowHosts: config.webhookAllowHosts, allowHttp: config.webhookAllowHttp === true },
    retryPeriodMs: config.webhookRetryPeriod * 1000,
  });
}

/** Runs `fn` with the tenant's registry, over the secrets key `serve` uses: a secret sealed here opens in the server. */
async function withRegistry<T>(cmd: Command, tenantName: string, fn: (hooks: WebhookRegistry, tenant: Tenant, by: ChangeActor) => Promise<T>): Promise<T> {
  return withOperator(cmd, async (stores: Stores, by, config) => {
    const tenant = await tenantNamed(stores, tenantName);
    const { box } = await openSecrets(stores.secrets, config);
    return fn(webhookRegistryFor(stores, config, box), tenant, by);
  });
}

const list = (v: string) => v.split(",").map((s) => s.trim()).filter(Boolean);
const json = (x: unknown) => process.stdout.write(JSON.stringify(x, null, 2) + "\n");

function bool(v: string): boolean {
  if (v !== "true" && v !== "false") throw new CliError(`expected true or false, not "${v}"`);
  return v === "true";
}

function defineWebhook(webhook: Command): void {
  addSettings(
    webhook
      .command("add")
      .description(`register a tenant's webhook endpoint; prints it as JSON and its signing secret (whsec_...) on stderr, shown this once. Events: ${WEBHOOK_EVENT_TYPES.join(", ")}`)
      .requiredOption("--tenant <name>", "tenant name")
      .requiredOption("--url <url>", "https URL the events are POSTed to")
      .requiredOption("--events <list>", "comma-separated event types", list)
      .option("--verdicts <which>", "verdict.stored: all, or non-yes (default all)")
      .option("--description <text>", "a note for people"),
    WEBHOOK_SETTINGS,
  ).action(async (o: { tenant: string; url: string; events: string[]; verdicts?: string; description?: string }, cmd: Command) => {
    await withRegistry(cmd, o.tenant, async (hooks, tenant, by) => {
      const { endpoint, secret } = await refusals(() =>
        hooks.add(tenant, { url: o.url, events: o.events, ...(o.verdicts ? { verdicts: o.verdicts } : {}), ...(o.description ? { description: o.description } : {}) }, by),
      );
      json(endpoint);
      process.stderr.write(`webhook ${endpoint.id} registered for tenant ${tenant.name}; its signing secret, shown this once:\n`);
      process.stderr.write(`${secret}\n`);
    });
  });

  addSettings(
    webhook.command("list").description("list a tenant's webhook endpoints as JSON (never their secrets)").requiredOption("--tenant <name>", "tenant name"),
    WEBHOOK_SETTINGS,
  ).action(async (o: { tenant: string }, cmd: Command) => {
    await withRegistry(cmd, o.tenant, async (hooks, tenant) => json(await hooks.list(tenant)));
  });

  addSettings(
    webhook
      .command("update")
      .description(`change an endpoint (a running server sees it within ${WEBHOOK_CACHE_MS / 1000} s)`)
      .requiredOption("--tenant <name>", "tenant name")
      .requiredOption("--id <id>", "the endpoint's id (webhook list)")
      .option("--url <url>", "a new URL")
      .option("--events <list>", "the new comma-separated event types", list)
      .option("--verdicts <which>", "all, or non-yes")
      .option("--description <text>", "a note for people")
      .option("--enabled <true|false>", "enable or disable the endpoint", bool),
    WEBHOOK_SETTINGS,
  ).action(async (o: { tenant: string; id: string; url?: string; events?: string[]; verdicts?: string; description?: string; enabled?: boolean }, cmd: Command) => {
    await withRegistry(cmd, o.tenant, async (hooks, tenant, by) => {
      const { tenant: _t, id, ...f } = o;
      const e = await refusals(() => hooks.update(tenant, id, f, by));
      if (!e) throw new CliError(`tenant ${tenant.name} has no webhook endpoint ${id}`);
      json(e);
    });
  });

  addSettings(
    webhook
      .command("rotate")
      .description("a new signing secret, printed on stderr this once; the previous one keeps signing beside it for --overlap seconds")
      .requiredOption("--tenant <name>", "tenant name")
      .requiredOption("--id <id>", "the endpoint's id")
      .option("--overlap <seconds>", `how long the previous secret keeps signing (default ${DEFAULT_ROTATION_OVERLAP_S}; 0: stops now)`),
    WEBHOOK_SETTINGS,
  ).action(async (o: { tenant: string; id: string; overlap?: string }, cmd: Command) => {
    const overlap = o.overlap === undefined ? DEFAULT_ROTATION_OVERLAP_S : /^\d{1,9}$/.test(o.overlap) ? Number(o.overlap) : NaN;
    if (Number.isNaN(overlap)) throw new CliError(`--overlap must be a whole number of seconds, not "${o.overlap}"`);
    await withRegistry(cmd, o.tenant, async (hooks, tenant, by) => {
      const r = await refusals(() => hooks.rotateSecret(tenant, o.id, by, overlap));
      if (!r) throw new CliError(`tenant ${tenant.name} has no webhook endpoint ${o.id}`);
      process.stderr.write(`new signing secret of ${o.id}${r.previousUntil ? `; the previous one signs beside it until ${r.previousUntil}` : ""}:\n${r.secret}\n`);
    });
  });

  addSettings(
    webhook.command("remove").description("remove an endpoint; its deliveries stay listed, pending ones fail").requiredOption("--tenant <name>", "tenant name").requiredOption("--id <id>", "the endpoint's id"),
    WEBHOOK_SETTINGS,
  ).action(async (o: { tenant: string; id: string }, cmd: Command) => {
    await withRegistry(cmd, o.tenant, async (hooks, tenant, by) => {
      if (!(await hooks.remove(tenant, o.id, by))) throw new CliError(`tenant ${tenant.name} has no webhook endpoint ${o.id}`);
      process.stderr.write(`webhook ${o.id} of tenant ${tenant.name} removed\n`);
    });
  });

  addSettings(
    webhook
      .command("deliveries")
      .description("list a tenant's deliveries as JSON, newest first")
      .requiredOption("--tenant <name>", "tenant name")
      .option("--id <id>", "only this endpoint's")
      .option("--limit <n>", "at most this many (default 50)"),
    WEBHOOK_SETTINGS,
  ).action(async (o: { tenant: string; id?: string; limit?: string }, cmd: Command) => {
    const limit = o.limit === undefined ? 50 : Number(o.limit);
    if (!Number.isInteger(limit) || limit < 1 || limit > 1000) throw new CliError("--limit is a whole number from 1 to 1000");
    await withRegistry(cmd, o.tenant, async (hooks, tenant) => json((await hooks.deliveries(tenant, { endpointId: o.id, limit })).map(deliveryView)));
  });

  addSettings(
    webhook.command("show").description("one delivery with its payload and attempts, as JSON").requiredOption("--tenant <name>", "tenant name").requiredOption("--delivery <id>", "the delivery's id"),
    WEBHOOK_SETTINGS,
  ).action(async (o: { tenant: string; delivery: string }, cmd: Command) => {
    await withRegistry(cmd, o.tenant, async (hooks, tenant) => {
      const d = await hooks.delivery(tenant, o.delivery);
      if (!d) throw new CliError(`tenant ${tenant.name} has no webhook delivery ${o.delivery}`);
      json(deliveryDetailView(d));
    });
  });

  addSettings(
    webhook.command("resend").description("attempt a delivery again (a running server picks it up), with a fresh retry period").requiredOption("--tenant <name>", "tenant name").requiredOption("--delivery <id>", "the delivery's id"),
    WEBHOOK_SETTINGS,
  ).action(async (o: { tenant: string; delivery: string }, cmd: Command) => {
    await withRegistry(cmd, o.tenant, async (hooks, tenant, by) => {
      if (!(await hooks.resend(tenant, o.delivery, by))) throw new CliError(`tenant ${tenant.name} has no webhook delivery ${o.delivery}`);
      process.stderr.write(`delivery ${o.delivery} queued again\n`);
    });
  });
}
