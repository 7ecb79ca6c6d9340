/**
 * A test harness's hold on a `pmsync serve` process, so that replicas running
 * as real processes can play a simulated day: the parent moves the process's
 * clock and asks for scheduler ticks over the IPC channel it spawned the
 * process with. Honoured only when NODE_ENV is "test" and PMSYNC_TEST_CLOCK is
 * "ipc" (starting at PMSYNC_TEST_NOW); operators never need it.
 *
 * Messages in: { type: "clock", ms } sets the clock; { type: "tick", id } ticks
 * the scheduler once; { type: "probe", id } asks what runs here. Each of the
 * last two is answered with the same id once done. { type: "ready" } goes out
 * once serve has started.
 */
import { ConfigError } from '../errors.ts';
import { RUN_QUEUE } from '../scheduler/dispatch.ts';
import type { RunningServe } from './serve.ts';

type Message = { type: 'clock'; ms: number } | { type: 'tick'; id: number } | { type: 'probe'; id: number };

export interface TickReply {
  type: 'ticked';
  id: number;
  /** Runs this replica dispatched (0 when it holds no scheduling shard). */
  dispatched: number;
  /** It decides the sources of some scheduling shards. */
  deciding: boolean;
  /** CPU time (user + system, µs) and wall time (ms) this process spent during the tick. */
  cpuMicros: number;
  wallMs: number;
  error?: string;
}

export interface ProbeReply {
  type: 'probed';
  id: number;
  /** `source/resource` of the runs going in this process. */
  running: string[];
  /** A worker here holds a job of the run queue, from pg-boss's fetch until pg-boss records its end. */
  busy: boolean;
  /** It decides the sources of some scheduling shards. */
  deciding: boolean;
}

export interface TestControl {
  now: () => Date;
  attach(serve: RunningServe): void;
}

/** The IPC clock and tick control, or undefined outside a test harness. */
export function ipcTestControl(env: NodeJS.ProcessEnv = process.env): TestControl | undefined {
  if (env.NODE_ENV !== 'test' || env.PMSYNC_TEST_CLOCK !== 'ipc' || !process.send) return undefined;
  let ms = Date.parse(env.PMSYNC_TEST_NOW ?? '');
  if (Number.isNaN(ms))
    throw new ConfigError([`PMSYNC_TEST_NOW: "${env.PMSYNC_TEST_NOW}" must be an ISO date-time with PMSYNC_TEST_CLOCK=ipc`]);
  let serve: RunningServe | undefined;
  const send = (reply: TickReply | ProbeReply) => process.send?.(reply);
  const onMessage = (raw: unknown) => {
    const m = raw as Message;
    if (m.type === 'clock') ms = m.ms;
    else if (m.type === 'tick') void tick(m.id);
    else if (m.type === 'probe')
      send({
        type: 'probed',
        id: m.id,
        running: serve?.running() ?? [],
        busy: serve?.queue.busy(RUN_QUEUE) ?? false,
        deciding: serve?.scheduler.deciding ?? false,
      });
  };
  const tick = async (id: number) => {
    const cpu = process.cpuUsage();
    const started = performance.now();
    const reply: TickReply = { type: 'ticked', id, dispatched: 0, deciding: false, cpuMicros: 0, wallMs: 0 };
    try {
      if (!serve) throw new Error('serve has not started');
      reply.dispatched = (await serve.scheduler.tick()).length;
      reply.deciding = serve.scheduler.deciding;
    } catch (err) {
      reply.error = (err as Error).message;
    }
    const used = process.cpuUsage(cpu);
    reply.cpuMicros = used.user + used.system;
    reply.wallMs = performance.now() - started;
    send(reply);
  };
  process.on('message', onMessage);
  // The channel must not keep a stopped serve alive.
  process.channel?.unref();
  return {
    now: () => new Date(ms),
    attach(running) {
      serve = running;
      process.send?.({ type: 'ready', url: running.url });
    },
  };
}
