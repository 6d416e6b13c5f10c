/**
 * The package root offers every name BullMQ's does, types included: a TypeScript program that
 * imports a type from 'bullmq' still compiles with 'echomq' (exports.test.ts compares runtime
 * names only). Read with the TypeScript checker from bullmq's index.d.ts and echomq's
 * src/index.ts (no build needed); the only names left out are the ones in OMITTED, each with
 * its reason. test/fixtures/bullmq-types.ts uses the common types as BullMQ's docs do.
 */
import { join } from 'node:path';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';

const root = join(import.meta.dirname, '..', '..');
const BULLMQ = join(root, 'node_modules', 'bullmq', 'dist', 'esm', 'index.d.ts');
const ECHOMQ = join(root, 'src', 'index.ts');
const FIXTURE = join(root, 'test', 'fixtures', 'bullmq-types.ts');

/** Reasons shared by several names. */
const POSTGRES = 'BullMQ 6 PostgreSQL backend: echomq runs on Redis only';
const RELAY = 'BullMQ 6 Relay (pub/sub over a backend): no echomq counterpart';
const BACKEND = 'BullMQ 6 pluggable backend layer: echomq has one Redis implementation, no backend object to swap';
const CLIENTS = 'adapters for other Redis client libraries (node-redis, Bun, Valkey GLIDE): echomq takes ioredis clients as they are';
const SANDBOX = "BullMQ's parent/child sandbox protocol: echomq's sandbox has its own (src/sandbox/messages.mjs)";
const INTERNAL = "a BullMQ internal (Scripts, backend or protected FlowProducer/Worker parts) that no public echomq call takes or returns";

/** BullMQ root names echomq deliberately does not export: name → why. */
const OMITTED: Record<string, string> = {
  ...Object.fromEntries([
    'DEFAULT_SCHEMA', 'LATEST_SCHEMA_VERSION', 'MIGRATION_ADVISORY_LOCK_KEY', 'MINIMUM_POSTGRES_VERSION', 'RECOMMENDED_POSTGRES_VERSION',
    'PgModule', 'PgNotification', 'PgPool', 'PgPoolClient', 'PgPoolConfig', 'PgQueryResult', 'PgQueryable',
    'PostgresConnection', 'PostgresConnectionOptions', 'PostgresPoolConfig', 'PostgresQueueBackend', 'PostgresRelayBackend',
    'SchemaMigrationRequiredError', 'SchemaVersionMismatchError', 'UnsupportedPostgresVersionError', 'assertPostgresVersion',
    'assertSchemaCompatibility', 'createPostgresBackend', 'createPostgresRelayBackend', 'isPgPool', 'quoteSchemaName', 'runMigrations',
  ].map((n) => [n, POSTGRES])),
  ...Object.fromEntries([
    'RELAY_LAYOUT_VERSION', 'RELAY_MINIMUM_REDIS_VERSION', 'Relay', 'RelayError', 'RelayErrorCode', 'RedisRelayBackend',
    'createRedisRelayBackend', 'checkRelayResult', 'IRelayBackend', 'RelayBackendFactory', 'RelayBackendOptions', 'RelayCounts',
    'RelayInboxBatch', 'RelayInboxEntry', 'RelayListener', 'RelayMessage', 'RelayNodeConnection', 'RelayNodeInfo', 'RelayNodeState',
    'RelayOptions', 'RelayPatternState', 'RelayPublishOptions', 'RelayPublishOpts', 'RelayPublishResult', 'RelayRetainedMessage',
    'RelayRetainedState', 'RelaySubscribeResult', 'RelaySubscription', 'RelaySubscriptionFilter', 'RelaySubscriptionState',
  ].map((n) => [n, RELAY])),
  ...Object.fromEntries([
    'BackendClasses', 'BackendFactory', 'IQueueBackend', 'RedisQueueBackend', 'createRedisBackend', 'getDefaultBackendFactory',
    'setDefaultBackendFactory', 'withBackend', 'JobData', 'raw2NextJobData',
  ].map((n) => [n, BACKEND])),
  ...Object.fromEntries([
    'BunRedisRawClient', 'NodeRedisCommandArgument', 'NodeRedisRawClient', 'NodeRedisRawTransaction', 'RedisCommandArgument',
    'createBunRedisClient', 'createIORedisClient', 'createNodeRedisClient', 'createValkeyGlideClient', 'isIRedisClient',
  ].map((n) => [n, CLIENTS])),
  ...Object.fromEntries([
    'Child', 'ChildCommand', 'ChildMessage', 'ChildPool', 'ChildProcessor', 'ParentCommand', 'ParentMessage', 'Receiver', 'asyncSend', 'childSend',
  ].map((n) => [n, SANDBOX])),
  ...Object.fromEntries([
    'ScriptQueueContext', 'RawCommand', 'MoveToDelayedOpts', 'RetryJobOpts', 'AddNodeOpts', 'AddChildrenOpts', 'FlowJobEntry',
    'FinishedPropValAttribute', 'RepeatableOptions', 'JobSchedulerJobOptions', 'Parent', 'LockManagerOptions', 'LockManagerWorkerContext',
    'EntryId', 'EntryRaw', 'StreamName', 'StreamReadRaw',
  ].map((n) => [n, INTERNAL])),
  AsyncFifoQueue: "a promise queue of BullMQ's worker internals; not part of echomq's API",
  LockManager: "BullMQ's lock-renewal class: echomq's worker renews leases itself (src/worker/worker-upkeep.ts)",
  IConnection: "BullMQ's connection interface (a client promise); echomq's RedisConnection holds the client itself",
  optsEncodeMap: "BullMQ's short names for stored job options: echomq stores options its own way",
  optsDecodeMap: "BullMQ's short names for stored job options: echomq stores options its own way",
  TelemetryAttributes: "BullMQ's span attribute names: echomq's spans carry messaging.* and echomq.* attributes",
  MetricNames: "BullMQ's OpenTelemetry metric names: echomq's metrics are its Prometheus ones (echomq/metrics)",
  trace: "BullMQ's helper that calls a Telemetry object: echomq traces through @opentelemetry/api (src/ops/tracing.ts)",
  withDetachedContext: "BullMQ's helper that calls a Telemetry object: echomq traces through @opentelemetry/api",
  getLegacyRepeatableJobError: "about BullMQ 5 repeatable-job keys in a BullMQ 6 queue: echomq's queues have none",
  hasLegacyRepeatableKeyShape: "about BullMQ 5 repeatable-job keys in a BullMQ 6 queue: echomq's queues have none",
  isLegacyRepeatableJobKey: "about BullMQ 5 repeatable-job keys in a BullMQ 6 queue: echomq's queues have none",
};

const config = ts.getParsedCommandLineOfConfigFile(join(root, 'tsconfig.json'), {}, {
  ...ts.sys,
  onUnRecoverableConfigFileDiagnostic: (d) => { throw new Error(ts.flattenDiagnosticMessageText(d.messageText, '\n')); },
})!;
const program = ts.createProgram([BULLMQ, ECHOMQ, FIXTURE], { ...config.options, noEmit: true });
const checker = program.getTypeChecker();

/** A module's export names, each with whether it names a type and whether it names a value. */
function exportsOf(file: string): Map<string, { type: boolean; value: boolean }> {
  const moduleSymbol = checker.getSymbolAtLocation(program.getSourceFile(file)!)!;
  const out = new Map<string, { type: boolean; value: boolean }>();
  for (const s of checker.getExportsOfModule(moduleSymbol)) {
    const target = s.flags & ts.SymbolFlags.Alias ? checker.getAliasedSymbol(s) : s;
    out.set(s.name, { type: (target.flags & ts.SymbolFlags.Type) !== 0, value: (target.flags & ts.SymbolFlags.Value) !== 0 });
  }
  return out;
}

const bullmq = exportsOf(BULLMQ);
const echomq = exportsOf(ECHOMQ);

describe('package root exports (BullMQ 6 type and value names)', () => {
  it('exports every name of bullmq\'s index.d.ts except the deliberate omissions', () => {
    const missing = [...bullmq.keys()].filter((n) => !echomq.has(n) && !(n in OMITTED)).sort();
    console.log(`BullMQ names: ${bullmq.size}, echomq names: ${echomq.size}, omitted on purpose: ${Object.keys(OMITTED).length}, missing: ${missing.length}`);
    expect(missing).toEqual([]);
  });

  it('omits only names BullMQ has and echomq lacks (the list stays current)', () => {
    const stale = Object.keys(OMITTED).filter((n) => !bullmq.has(n) || echomq.has(n));
    expect(stale).toEqual([]);
  });

  it('a BullMQ name that is a type is a type in echomq too', () => {
    const notTypes = [...bullmq].filter(([n, b]) => b.type && echomq.has(n) && !echomq.get(n)!.type).map(([n]) => n);
    expect(notTypes).toEqual([]);
  });

  it('test/fixtures/bullmq-types.ts (BullMQ-style uses of the common types) compiles', () => {
    const sf = program.getSourceFile(FIXTURE)!;
    const diags = [...program.getSyntacticDiagnostics(sf), ...program.getSemanticDiagnostics(sf)];
    const text = diags.map((d) => `${d.start !== undefined ? sf.getLineAndCharacterOfPosition(d.start).line + 1 : '?'}: ${ts.flattenDiagnosticMessageText(d.messageText, '\n')}`);
    expect(text).toEqual([]);
  });
});
