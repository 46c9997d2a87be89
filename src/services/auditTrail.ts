import type { Clock, Rng } from "../clock.ts";
import { redactSecrets, type AuditActor, type AuditChange, type AuditRecord, type AuditSource } from "../domain/audit.ts";
import type { AuditFilter, AuditStore } from "../store/types.ts";
import { AUDIT_ACTOR_KINDS } from "../domain/audit.ts";
import { AppError } from "../errors/AppError.ts";
import { catalog } from "../errors/catalog.ts";
import { decodeCursor, encodeCursor, isoTime } from "../portal/history.ts";

/** What a reader of the trail filters on (the admin API's and the CLI's words); every field optional. */
export interface AuditView {
  /** ISO 8601 (or a date): records at or after */
  from?: string;
  /** records before */
  to?: string;
  /** an actor kind (`user`, `api-client`, `operator`, `system`) or an actor's id (a user id, a client id, an OS user) */
  actor?: string;
  /** an action, or a family: `key.*` */
  action?: string;
  /** `KIND` or `KIND:ID` (`api-key:abc`, `tenant:t_x`) */
  target?: string;
}

/** records on one page of the admin API, and the most one export writes */
export const AUDIT_PAGE_SIZE = 100;
export const MAX_AUDIT_EXPORT = 100_000;

/** what the trail needs of a logger: any pino logger fits */
export interface AuditLog {
  error(obj: object, msg: string): void;
}

/**
 * Somewhere the trail also sends every record, for a SIEM (`--audit-file`, `--audit-syslog`; auditSinks.ts). `send`
 * must not throw and must not wait for the write: it queues and reports a failure through `onFailure`.
 */
export interface AuditSink {
  readonly name: string;
  send(record: AuditRecord, onFailure: (err: unknown) => void): void;
  /** sends what is queued, then lets go of the file or socket */
  close(): Promise<void>;
}

/**
 * Who is making changes, and from where, bound to the trail they are recorded in: the one value the HTTP layer
 * (a portal user, an API client) and the CLI (the operator) hand to every service method that changes state. The
 * service says what it changed with `record`; the trail adds the id, the time, the actor and the source.
 */
export interface ChangeActor {
  readonly actor: AuditActor;
  readonly from: AuditSource;
  /** records a change that has committed: the record is written to the store, then streamed */
  record(change: AuditChange): Promise<void>;
  /**
   * For a store that writes the record in the change's own transaction: the record to write (id, time, secrets
   * removed), and `committed(record)` to stream it once the transaction has.
   */
  stamp(change: AuditChange): AuditRecord;
  committed(record: AuditRecord): void;
}

/**
 * The audit trail (docs/audit.md): `as(actor, from)` makes the ChangeActor that services record through; each record
 * has its before and after passed through `redactSecrets`, is written to the store (awaited, after the change it
 * records has committed) and then handed to the sinks. A record the store cannot take never fails the change that
 * was already made: it is logged whole (secrets removed) and counted (`onFailure("store")`); a sink that fails is
 * counted and logged the same way, and never slows the change.
 */
export class AuditTrail {
  constructor(
    private readonly store: AuditStore,
    private readonly clock: Clock,
    private readonly rng: Rng,
    private readonly opts: { sinks?: readonly AuditSink[]; log?: AuditLog; onFailure?: (sink: string) => void } = {},
  ) {}

  as(actor: AuditActor, from: AuditSource): ChangeActor {
    return {
      actor,
      from,
      record: (change) => this.write(actor, from, change).then(() => undefined),
      stamp: (change) => this.stamp(actor, from, change),
      committed: (record) => this.stream(record),
    };
  }

  /** Builds, stores and streams one record; answers it. */
  async write(actor: AuditActor, from: AuditSource, change: AuditChange): Promise<AuditRecord> {
    const record = this.stamp(actor, from, change);
    try {
      await this.store.appendAudit(record);
    } catch (err) {
      this.failed("store", err, record);
    }
    this.stream(record);
    return record;
  }

  private stamp(actor: AuditActor, from: AuditSource, change: AuditChange): AuditRecord {
    return {
      id: "au_" + this.rng.bytes(16).toString("base64url"),
      time: new Date(this.clock.nowMs()).toISOString(),
      actor,
      tenantId: change.tenantId,
      action: change.action,
      target: { kind: change.target.kind, id: change.target.id },
      before: redactSecrets(change.before ?? null),
      after: redactSecrets(change.after ?? null),
      from,
    };
  }

  /** hands a stored record to every sink; never waits for them */
  private stream(record: AuditRecord): void {
    for (const sink of this.opts.sinks ?? []) {
      try {
        sink.send(record, (err) => this.failed(sink.name, err, record));
      } catch (err) {
        this.failed(sink.name, err, record);
      }
    }
  }

  /**
   * One page of the trail, newest first: a tenant's own records (`tenantId`), or every record (an operator:
   * undefined). `after` is the previous page's `next` cursor.
   */
  async page(tenantId: string | undefined, v: AuditView, after?: string, limit = AUDIT_PAGE_SIZE): Promise<{ items: AuditRecord[]; next?: string }> {
    const cursor = decodeCursor(after, ["string", "string"]) as [string, string] | undefined;
    const items = await this.store.queryAudit({ ...auditFilter(tenantId, v), ...(cursor ? { before: { time: cursor[0], id: cursor[1] } } : {}), limit: limit + 1 });
    const shown = items.slice(0, limit);
    const last = shown[shown.length - 1];
    return items.length > limit && last ? { items: shown, next: encodeCursor([last.time, last.id]) } : { items: shown };
  }

  /**
   * Every record the view selects, newest first, one JSON line each, read 1 000 at a time, at most `max`
   * (MAX_AUDIT_EXPORT): the export of the admin API and `attestd audit export`. The filter is checked before the
   * first line, so a bad one throws at the first `next()`.
   */
  async *exportLines(tenantId: string | undefined, v: AuditView, max = MAX_AUDIT_EXPORT): AsyncGenerator<string> {
    const f = auditFilter(tenantId, v);
    let before: { time: string; id: string } | undefined;
    let sent = 0;
    while (sent < max) {
      const rows = await this.store.queryAudit({ ...f, ...(before ? { before } : {}), limit: Math.min(1000, max - sent) });
      if (rows.length === 0) return;
      yield rows.map((r) => JSON.stringify(r) + "\n").join("");
      sent += rows.length;
      const last = rows[rows.length - 1]!;
      before = { time: last.time, id: last.id };
      if (rows.length < 1000) return;
    }
  }

  async close(): Promise<void> {
    await Promise.all((this.opts.sinks ?? []).map((s) => s.close()));
  }

  private failed(sink: string, err: unknown, record: AuditRecord): void {
    this.opts.onFailure?.(sink);
    // the record goes to the service log, so a store that refused it does not lose it outright
    this.opts.log?.error({ err, sink, audit: record }, `audit record ${record.id} (${record.action}) could not be written to ${sink}`);
  }
}

/** The store's filter for a reader's view: times made exact ISO, `actor` a kind or an id, `target` KIND or KIND:ID. */
export function auditFilter(tenantId: string | undefined, v: AuditView): AuditFilter {
  const f: AuditFilter = {};
  if (tenantId !== undefined) f.tenantId = tenantId;
  if (v.from) f.since = isoTime(v.from, "from");
  if (v.to) f.until = isoTime(v.to, "to");
  if (v.actor) {
    if ((AUDIT_ACTOR_KINDS as readonly string[]).includes(v.actor)) f.actorKind = v.actor as AuditFilter["actorKind"];
    else f.actorId = v.actor;
  }
  if (v.action) {
    if (!/^[a-z0-9-]+(\.[a-z0-9-]+)*(\.\*)?$/.test(v.action)) throw new AppError(catalog.PORTAL_INVALID_REQUEST, "action: a dotted name such as key.revoked, or a family such as key.*");
    f.action = v.action;
  }
  if (v.target) {
    const i = v.target.indexOf(":");
    if (i < 0) f.targetKind = v.target;
    else {
      f.targetKind = v.target.slice(0, i);
      f.targetId = v.target.slice(i + 1);
    }
  }
  return f;
}
