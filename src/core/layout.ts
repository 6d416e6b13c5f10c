/**
 * The version of the stored layout (keys, hash fields, encodings) that docs/protocol.md
 * describes. Clients of every language compare it with the one a queue's meta hash records
 * and stop on a mismatch instead of guessing.
 */
export const LAYOUT_VERSION = 1;
