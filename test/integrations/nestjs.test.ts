// A real NestJS application on echomq/nestjs: the module, decorators and hosts of
// `@nestjs/bullmq` under the same names, so the import line is the whole switch.
import 'reflect-metadata';
import { afterAll, describe, expect, it } from 'vitest';
import { Injectable } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import type { Job } from '../../src/index.js';
import { Queue as EchoQueue, FlowProducer as EchoFlowProducer } from '../../src/index.js';
import {
  BullModule, EchoMQModule, InjectFlowProducer, InjectQueue, OnQueueEvent, OnWorkerEvent, Processor, QueueEventsHost,
  QueueEventsListener, WorkerHost, getQueueToken,
} from '../../src/integrations/nestjs/index.js';
import { client, qname, redisUrl, waitFor } from '../helpers.js';

const redis = client();
afterAll(() => redis.quit());

const QUEUE = qname('nest');
const ORDER: string[] = [];
const WORKER_EVENTS: string[] = [];
const QUEUE_EVENTS: string[] = [];

@Processor(QUEUE, { concurrency: 1, autorun: false })
class Mailer extends WorkerHost {
  async process(job: Job): Promise<string> {
    ORDER.push(`${job.data.lane}:${job.data.n}`);
    return `sent ${job.data.n}`;
  }

  @OnWorkerEvent('completed')
  onCompleted(job: Job, result: string): void {
    WORKER_EVENTS.push(`${job.id}:${result}`);
  }
}

@QueueEventsListener(QUEUE)
class MailEvents extends QueueEventsHost {
  @OnQueueEvent('completed')
  onCompleted({ jobId }: { jobId: string }): void {
    QUEUE_EVENTS.push(jobId);
  }
}

@Injectable()
class MailService {
  constructor(
    @InjectQueue(QUEUE) readonly queue: EchoQueue,
    @InjectFlowProducer('flows') readonly flows: EchoFlowProducer,
  ) {}
}

describe('echomq/nestjs', () => {
  it('injects a queue, runs a @Processor, delivers worker and queue events, and shuts down cleanly', async () => {
    expect(EchoMQModule).toBe(BullModule);
    const moduleRef = await Test.createTestingModule({
      imports: [
        BullModule.forRootAsync({ useFactory: async () => ({ connection: redisUrl(), prefix: 'nest' }) }),
        BullModule.registerQueue({ name: QUEUE }),
        BullModule.registerFlowProducer({ name: 'flows' }),
      ],
      providers: [Mailer, MailEvents, MailService],
    }).compile();
    // The testing module is a Nest application context: init() runs the bootstrap hooks and
    // close() the shutdown hooks, as NestFactory.createApplicationContext does.
    const app = await moduleRef.init();

    const svc = app.get(MailService);
    expect(svc.queue).toBeInstanceOf(EchoQueue);
    expect(app.get(getQueueToken(QUEUE))).toBe(svc.queue);
    expect(svc.queue.opts.prefix).toBe('nest');
    const worker = app.get(Mailer).worker;
    // Lanes and priorities through the injected queue: priority order inside a lane, lanes in turn.
    await svc.queue.add('m', { lane: 'a', n: 3 }, { lane: 'a', priority: 3 });
    await svc.queue.add('m', { lane: 'a', n: 1 }, { lane: 'a', priority: 1 });
    await svc.queue.add('m', { lane: 'b', n: 2 }, { lane: 'b', priority: 2 });
    await svc.flows.add({ name: 'parent', queueName: QUEUE, data: { lane: 'flow', n: 9 }, children: [
      { name: 'child', queueName: QUEUE, data: { lane: 'flow', n: 8 } },
    ] });
    void worker.run();
    await waitFor(() => ORDER.length === 5 && QUEUE_EVENTS.length === 5, 10_000, 'five jobs processed');
    expect(ORDER.filter((x) => x.startsWith('a:'))).toEqual(['a:1', 'a:3']);
    expect(ORDER.indexOf('flow:8')).toBeLessThan(ORDER.indexOf('flow:9'));
    expect(WORKER_EVENTS).toHaveLength(5);
    expect(WORKER_EVENTS.some((e) => e.endsWith(':sent 1'))).toBe(true);
    expect(app.get(MailEvents).queueEvents.name).toBe(QUEUE);

    await app.close();
    expect(worker.isRunning()).toBe(false);
    // Every connection the module opened is closed: nothing named for this queue is left.
    await waitFor(async () => !(await redis.client('LIST') as string).includes(`name=nest:${Buffer.from(QUEUE).toString('base64')}`), 5000, 'connections closed');
  });
});
