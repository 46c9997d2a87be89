/** One line of the activity log (every request; errors with the errorId their body carried). */

export interface ActivityEntry {
  time: string;
  errorId: string | null;
  tenantId: string | null;
  clientId: string | null;
  method: string;
  route: string;
  status: number;
  code: string | null;
  latencyMs: number;
  remoteAddress: string;
  /**
   * for an error answer, its real reason: the catalog error's reason, or the one behind a deliberately vague
   * answer (AppError.privateReason). For the operator only (`attestd activity`), never a client or tenant.
   */
  reason: string | null;
}
