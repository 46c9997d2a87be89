import type { Clock, Rng } from "../clock.ts";
import { newAuditId, redactSecrets, type AuditActor, type AuditChange, type AuditRecord, type AuditSource } from "../domain/audit.ts";
import type { AuditStore } from "../store/types.ts";


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
  private lastStampMs = -1;
  private sequence = 0;

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

  /** the how-manieth record of this millisecond this trail stamps (newAuditId) */
  private sequenceAt(nowMs: number): number {
    if (nowMs === this.lastStampMs) return ++this.sequence;
    this.lastStampMs = nowMs;
    return (this.sequence = 0);
  }

  private stamp(actor: AuditActor, from: AuditSource, change: AuditChange): AuditRecord {
    const nowMs = this.clock.nowMs();
    return {
      id: newAuditId(nowMs, this.sequenceAt(nowMs), this.rng),
      time: new Date(nowMs).toISOString(),
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

  async close(): Promise<void> {
    await Promise.all((this.opts.sinks ?? []).map((s) => s.close()));
  }

  private failed(sink: string, err: unknown, record: AuditRecord): void {
    this.opts.onFailure?.(sink);
    // the record goes to the service log, so a store that refused it does not lose it outright
    this.opts.log?.error({ err, sink, audit: record }, `audit record ${record.id} (${record.action}) could not be written to ${sink}`);
  }
}

