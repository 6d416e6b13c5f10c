/**
 * BullModule for NestJS, with `@nestjs/bullmq`'s shape: forRoot / forRootAsync (shared
 * configuration, optionally under a configKey), registerQueue / registerQueueAsync,
 * registerFlowProducer / registerFlowProducerAsync. Queues and flow producers are providers
 * (inject them with @InjectQueue / @InjectFlowProducer) and are closed on application shutdown;
 * the explorer (explorer.ts) starts the workers and queue-events listeners the app declares.
 */
import type { DynamicModule, InjectionToken, Provider } from '@nestjs/common';
import { FlowProducer, type FlowProducerOptions } from '../../lifecycle/flow-producer.js';
import { Queue, type QueueOptions } from '../../queue/queue.js';
import { ExplorerModule } from './explorer.js';
import { common } from './nest.js';
import { getFlowProducerToken, getQueueToken, getSharedConfigToken } from './tokens.js';

/** Shared configuration given to forRoot: queue options (connection, prefix, defaultJobOptions, …). */
export type BullRootModuleOptions = QueueOptions;

export interface RegisterQueueOptions extends QueueOptions {
  /** Queue name; also the injection name (@InjectQueue(name)). */
  name?: string;
  /** The forRoot configuration to build on (forRoot(configKey, options)). */
  configKey?: string;
}

export interface RegisterFlowProducerOptions extends FlowProducerOptions {
  name?: string;
  configKey?: string;
}

/** Async options, as Nest's usual factory/class/existing pattern. */
export interface AsyncOptions<T> {
  imports?: any[];
  useFactory?: (...args: any[]) => T | Promise<T>;
  inject?: InjectionToken[];
  useClass?: new (...args: any[]) => unknown;
  useExisting?: InjectionToken;
}

export interface SharedBullConfigurationFactory {
  createSharedConfiguration(): BullRootModuleOptions | Promise<BullRootModuleOptions>;
}
export type SharedBullAsyncConfiguration = AsyncOptions<BullRootModuleOptions>;
export interface RegisterQueueAsyncOptions extends AsyncOptions<RegisterQueueOptions> {
  name?: string;
  configKey?: string;
}
export interface RegisterFlowProducerAsyncOptions extends AsyncOptions<RegisterFlowProducerOptions> {
  name?: string;
  configKey?: string;
}

type Closable = { close(): Promise<void>; onApplicationShutdown?: () => Promise<void> };

/** Nest calls onApplicationShutdown on providers that have it: closes what the module created. */
function closeOnShutdown<T extends Closable>(x: T): T {
  x.onApplicationShutdown = () => x.close();
  return x;
}

const optional = (token: string) => ({ token, optional: true });

/** Which method of a class provider builds the options (as `@nestjs/bullmq` names them). */
const FACTORY_METHODS = ['createSharedConfiguration', 'createRegisterQueueOptions', 'createRegisterFlowProducerOptions'];

function asyncProvider<T>(token: string, o: AsyncOptions<T>, method: string): Provider[] {
  if (o.useFactory) return [{ provide: token, useFactory: o.useFactory, inject: o.inject ?? [] }];
  const dep = o.useExisting ?? o.useClass;
  if (!dep) throw new TypeError(`${method}: give useFactory, useClass or useExisting`);
  const build = (f: Record<string, () => T>) => {
    const fn = FACTORY_METHODS.map((m) => f[m]).find((x) => typeof x === 'function');
    if (!fn) throw new TypeError(`${method}: the options class has none of ${FACTORY_METHODS.join(', ')}`);
    return fn.call(f);
  };
  const extra: Provider[] = o.useClass ? [{ provide: o.useClass, useClass: o.useClass }] : [];
  return [...extra, { provide: token, useFactory: build, inject: [dep] }];
}

const uniqImports = (list: Array<AsyncOptions<unknown>>) => [...new Set(list.flatMap((o) => o.imports ?? []))];

export class BullModule {
  /** Shared configuration for every queue, flow producer and worker (optionally under a configKey). */
  static forRoot(configKeyOrOptions: string | BullRootModuleOptions, options?: BullRootModuleOptions): DynamicModule {
    const [configKey, config] = typeof configKeyOrOptions === 'string' ? [configKeyOrOptions, options ?? {}] : [undefined, configKeyOrOptions ?? {}];
    const token = getSharedConfigToken(configKey);
    return { global: true, module: BullModule, imports: [ExplorerModule], providers: [{ provide: token, useValue: config }], exports: [token] };
  }

  static forRootAsync(configKeyOrOptions: string | SharedBullAsyncConfiguration, options?: SharedBullAsyncConfiguration): DynamicModule {
    const [configKey, o] = typeof configKeyOrOptions === 'string' ? [configKeyOrOptions, options!] : [undefined, configKeyOrOptions];
    const token = getSharedConfigToken(configKey);
    return {
      global: true, module: BullModule, imports: [ExplorerModule, ...(o.imports ?? [])],
      providers: asyncProvider(token, o, 'forRootAsync'), exports: [token],
    };
  }

  static registerQueue(...options: RegisterQueueOptions[]): DynamicModule {
    const providers: Provider[] = options.map((o) => ({
      provide: getQueueToken(o.name),
      useFactory: (shared?: QueueOptions) => {
        const { name, configKey, ...own } = o;
        return closeOnShutdown(new Queue(name ?? 'default', { ...(shared ?? {}), ...own }));
      },
      inject: [optional(getSharedConfigToken(o.configKey))],
    }));
    return { module: BullModule, imports: [ExplorerModule], providers, exports: providers };
  }

  static registerQueueAsync(...options: RegisterQueueAsyncOptions[]): DynamicModule {
    const providers: Provider[] = [];
    const exports: string[] = [];
    for (const o of options) {
      const optsToken = `${getQueueToken(o.name)}_options`;
      providers.push(...asyncProvider(optsToken, o, 'registerQueueAsync'));
      providers.push({
        provide: getQueueToken(o.name),
        useFactory: (own: RegisterQueueOptions, shared?: QueueOptions) => {
          const { name, configKey, ...rest } = own ?? {};
          return closeOnShutdown(new Queue(o.name ?? name ?? 'default', { ...(shared ?? {}), ...rest }));
        },
        inject: [optsToken, optional(getSharedConfigToken(o.configKey))],
      });
      exports.push(getQueueToken(o.name));
    }
    return { module: BullModule, imports: [ExplorerModule, ...uniqImports(options)], providers, exports };
  }

  static registerFlowProducer(...options: RegisterFlowProducerOptions[]): DynamicModule {
    const providers: Provider[] = options.map((o) => ({
      provide: getFlowProducerToken(o.name),
      useFactory: (shared?: QueueOptions) => {
        const { name, configKey, ...own } = o;
        return closeOnShutdown(new FlowProducer({ ...pickConnection(shared), ...own }));
      },
      inject: [optional(getSharedConfigToken(o.configKey))],
    }));
    return { module: BullModule, providers, exports: providers };
  }

  static registerFlowProducerAsync(...options: RegisterFlowProducerAsyncOptions[]): DynamicModule {
    const providers: Provider[] = [];
    const exports: string[] = [];
    for (const o of options) {
      const optsToken = `${getFlowProducerToken(o.name)}_options`;
      providers.push(...asyncProvider(optsToken, o, 'registerFlowProducerAsync'));
      providers.push({
        provide: getFlowProducerToken(o.name),
        useFactory: (own: RegisterFlowProducerOptions, shared?: QueueOptions) => {
          const { name, configKey, ...rest } = own ?? {};
          return closeOnShutdown(new FlowProducer({ ...pickConnection(shared), ...rest }));
        },
        inject: [optsToken, optional(getSharedConfigToken(o.configKey))],
      });
      exports.push(getFlowProducerToken(o.name));
    }
    return { module: BullModule, imports: uniqImports(options), providers, exports };
  }
}
common.Module({})(BullModule);

/** The options a Worker, QueueEvents or FlowProducer shares with the queue configuration. */
export function pickConnection(o: QueueOptions | undefined): { connection?: QueueOptions['connection']; prefix?: string } {
  const out: { connection?: QueueOptions['connection']; prefix?: string } = {};
  if (o?.connection !== undefined) out.connection = o.connection;
  if (o?.prefix !== undefined) out.prefix = o.prefix;
  return out;
}

/** The same module under echomq's own name. */
export const EchoMQModule = BullModule;
