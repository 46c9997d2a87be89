/**
 * A failure the operator can act on: a malformed flag or config file, an unreadable file, a start-up refused for a
 * stated reason, a secrets key that does not open the store. The `attestd` command prints its message as one line
 * and exits 1, with no stack trace; anything else is a bug and gets its stack with ATTESTD_DEBUG=1. A class of its
 * own, in a module that imports nothing, so the command can recognise these without loading the server.
 */
export class OperatorError extends Error {}
