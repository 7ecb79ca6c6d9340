/**
 * `pmsync webhooks ...`: registrations at the Core API (register, list,
 * delete, rotate-secret), the dead-letter queue, and the receiver
 * (webhooks-receive.ts). Registrations are live writes to the account: every
 * change is printed first and confirmed on a terminal, or by --yes.
 */
import { createInterface } from 'node:readline/promises';
import { Command, InvalidArgumentError } from 'commander';
import type { App } from '../../app.ts';
import { insecureHttpHost } from '../../config/insecure-http.ts';
import { type Config, type CoreSourceConfig } from '../../config/schema.ts';
import { PmsyncError } from '../../errors.ts';
import { canonicalEventName, EVENT_NAMES, type EventName } from '../../webhooks/events.ts';
import {
  maskUrl,
  normalizePublicBase,
  ownRegistrations,
  planRegistration,
  RegistrationApi,
  type Registration,
  type RegistrationPlan,
} from '../../webhooks/registration.ts';
import { hashToken, newToken } from '../../webhooks/secrets.ts';
import { activateSecret, addProvisionalSecret, expireSecrets, loadSecrets } from '../../state/webhook-secrets.ts';
import { secretGraceSeconds } from '../../config/webhooks.ts';
import { configFrom, fail, findSource, requireSources, withApp } from '../shared.ts';
import { receiveCommand } from './webhooks-receive.ts';

const out = (line = '') => process.stdout.write(`${line}\n`);

function positive(text: string): number {
  if (!/^\d+$/.test(text) || Number(text) < 1) throw new InvalidArgumentError('expected a positive number');
  return Number(text);
}

/** The one Core source a registration command acts on; Subset and Pro send no webhooks. */
export function coreSource(config: Config, name: string | undefined): CoreSourceConfig {
  const cores = config.sources.filter((s): s is CoreSourceConfig => s.kind === 'core');
  if (!name) {
    if (cores.length === 1) return cores[0]!;
    throw new PmsyncError(
      'USAGE',
      `pass --source: ${cores.length === 0 ? 'no core source is configured' : `core sources are ${cores.map((s) => s.name).join(', ')}`}`,
    );
  }
  const [source] = findSource(config, name);
  if (source!.kind !== 'core') {
    const api = source!.kind === 'subset' ? 'the Subset API' : 'the Pro API';
    throw new PmsyncError('USAGE', `source "${name}" is a ${source!.kind} source: ${api} sends no webhooks (only the Core API does)`);
  }
  return source as CoreSourceConfig;
}

/** Asks on a terminal; without one, only --yes can approve live changes. */
async function confirm(question: string, yes: boolean | undefined): Promise<boolean> {
  if (yes) return true;
  if (!process.stdin.isTTY || !process.stdout.isTTY) {
    throw new PmsyncError(
      'USAGE',
      'these are live changes to the account and there is no terminal to confirm them on: nothing was changed. Re-run with --yes to approve.',
    );
  }
  const rl = createInterface({ input: process.stdin, output: process.stdout });
  try {
    return /^y(es)?$/i.test((await rl.question(`${question} [y/N] `)).trim());
  } finally {
    rl.close();
  }
}

function parseEvents(values: string[] | undefined): EventName[] {
  if (!values || values.length === 0) return [...EVENT_NAMES];
  return values
    .flatMap((v) => v.split(','))
    .map((v) => {
      const name = canonicalEventName(v);
      if (!name) throw new PmsyncError('USAGE', `--events ${v}: not an event name (${EVENT_NAMES.join(', ')})`);
      return name;
    });
}

function printPlan(source: CoreSourceConfig, plan: RegistrationPlan): void {
  out(`source "${source.name}": webhooks to ${maskUrl(plan.url)}${plan.tokenIsNew ? ' (a new secret token)' : ''}`);
  for (const e of plan.create) out(`  create  ${e}`);
  for (const r of plan.keep) out(`  keep    #${r.Id} ${r.EventType}`);
  for (const r of plan.remove) out(`  delete  #${r.Id} ${r.EventType} ${maskUrl(r.WebhookUrl)} (${r.why})`);
  if (plan.others > 0) out(`  (${plan.others} registration(s) of other integrations are left alone)`);
}

/** Carries out a plan in the order that never leaves a delivery without an accepted token. */
async function applyPlan(app: App, source: CoreSourceConfig, api: RegistrationApi, plan: RegistrationPlan): Promise<void> {
  const hash = hashToken(plan.token);
  if (plan.tokenIsNew) await addProvisionalSecret(app.pool, source.name, hash, app.ctx.now());
  for (const event of plan.create) await api.create(event, plan.url);
  for (const r of plan.remove) await api.delete(r.Id);
  if (plan.tokenIsNew) {
    const now = app.ctx.now();
    await activateSecret(app.pool, source.name, hash, now, new Date(now.getTime() + secretGraceSeconds(source) * 1000));
  }
}

interface RegisterOptions {
  source: string;
  url?: string;
  events?: string[];
  yes?: boolean;
}

async function register(app: App, config: Config, opts: RegisterOptions, rotate: boolean): Promise<void> {
  const source = coreSource(config, opts.source);
  const api = new RegistrationApi(app.ctx.clientFor(source));
  const [registrations, secrets] = await Promise.all([api.list(), loadSecrets(app.pool, source.name)]);
  const owned = ownRegistrations(registrations, source.name, secrets);
  for (const r of owned) app.redactor.add(r.token);

  let publicBase: string;
  if (opts.url) publicBase = normalizePublicBase(opts.url, source);
  else {
    // rotate-secret without --url keeps the URL the registrations already use.
    const bases = [...new Set((owned.some((r) => r.current) ? owned.filter((r) => r.current) : owned).map((r) => r.base))];
    if (bases.length !== 1) {
      throw new PmsyncError(
        'USAGE',
        bases.length === 0
          ? `source "${source.name}" has no pmsync webhook registrations: run "pmsync webhooks register" first`
          : `the registrations of source "${source.name}" point to several URLs: pass --url`,
      );
    }
    publicBase = bases[0]!;
  }
  const clear = insecureHttpHost(publicBase);
  if (clear) {
    app.logger.warn(
      { source: source.name, host: clear },
      `the API delivers the webhooks of source "${source.name}" to ${clear} in plain http, as its configuration allows (allowInsecureHttp): the secret token and the events cross the network unencrypted`,
    );
  }
  const plan = planRegistration({
    source: source.name,
    publicBase,
    events: parseEvents(opts.events),
    rotate,
    registrations,
    secrets,
    newToken,
  });
  app.redactor.add(plan.token);
  printPlan(source, plan);
  if (plan.create.length === 0 && plan.remove.length === 0) {
    out('nothing to change');
    return;
  }
  if (!(await confirm('These are live changes to the account. Apply them?', opts.yes))) {
    out('nothing was changed');
    return;
  }
  await applyPlan(app, source, api, plan);
  out(`done: ${plan.create.length} created, ${plan.remove.length} deleted`);
  if (plan.tokenIsNew && owned.length > 0) {
    out(`the previous secret token stays accepted for ${secretGraceSeconds(source)} s, for deliveries already on their way`);
  }
}

function registrationCommand(name: 'register' | 'rotate-secret'): Command {
  const rotate = name === 'rotate-secret';
  const cmd = new Command(name)
    .requiredOption('-s, --source <name>', 'the Core source')
    .option('-y, --yes', 'apply without asking (required when not on a terminal)');
  if (rotate) {
    cmd
      .description(
        'issue a new secret token and move every webhook registration of the source to it; the old token stays accepted for the grace period',
      )
      .option('--url <public-base>', 'public base URL of the receiver (default: the one the registrations use)');
  } else {
    cmd
      .description('register the receiver for the events (all six by default), once per event; existing registrations are kept')
      .requiredOption(
        '--url <public-base>',
        'public base URL of the receiver, e.g. https://sync.example.com (pmsync adds /webhooks/<source>/<token>)',
      )
      .option('--events <names...>', `events to register (${EVENT_NAMES.join(', ')})`);
  }
  return cmd.action(async (opts: RegisterOptions, command: Command) => {
    try {
      const config = configFrom(command);
      requireSources(config);
      coreSource(config, opts.source);
      await withApp(config, (app) => register(app, config, opts, rotate));
    } catch (err) {
      fail(err);
    }
  });
}

function owner(r: Registration, owned: Map<number, { current: boolean }>): string {
  const o = owned.get(r.Id);
  return o ? (o.current ? 'pmsync' : 'pmsync (old secret)') : 'other';
}

function listCommand(): Command {
  return new Command('list')
    .description("list the account's webhook registrations (pmsync's tokens are masked)")
    .option('-s, --source <name>', 'the Core source (default: the only one)')
    .option('--json', 'print JSON')
    .action(async (opts: { source?: string; json?: boolean }, command: Command) => {
      try {
        const config = configFrom(command);
        requireSources(config);
        const source = coreSource(config, opts.source);
        await withApp(config, async (app) => {
          const api = new RegistrationApi(app.ctx.clientFor(source));
          const [registrations, secrets] = await Promise.all([api.list(), loadSecrets(app.pool, source.name)]);
          const ownedList = ownRegistrations(registrations, source.name, secrets);
          for (const r of ownedList) app.redactor.add(r.token);
          const owned = new Map(ownedList.map((r) => [r.Id, r]));
          const rows = registrations.map((r) => ({ id: r.Id, eventType: r.EventType, url: maskUrl(r.WebhookUrl), owner: owner(r, owned) }));
          if (opts.json) return out(JSON.stringify(rows, null, 2));
          if (rows.length === 0) return out(`source "${source.name}": no webhook registrations`);
          for (const r of rows) out(`#${String(r.id).padEnd(6)} ${r.eventType.padEnd(20)} ${r.url}  ${r.owner}`);
        });
      } catch (err) {
        fail(err);
      }
    });
}

function deleteCommand(): Command {
  return new Command('delete')
    .description("delete one registration by id, or --all of pmsync's registrations of the source (others are never touched)")
    .argument('[id]', 'registration id (a positive integer)')
    .requiredOption('-s, --source <name>', 'the Core source')
    .option('--all', "every registration carrying one of this source's pmsync tokens")
    .option('-y, --yes', 'apply without asking (required when not on a terminal)')
    .action(async (idText: string | undefined, opts: { source: string; all?: boolean; yes?: boolean }, command: Command) => {
      try {
        if ((idText === undefined) === !opts.all) throw new PmsyncError('USAGE', 'pass either a registration id or --all');
        if (idText !== undefined && !/^[1-9]\d{0,14}$/.test(idText))
          throw new PmsyncError('USAGE', `${idText}: a registration id is a positive integer`);
        const config = configFrom(command);
        requireSources(config);
        const source = coreSource(config, opts.source);
        await withApp(config, async (app) => {
          const api = new RegistrationApi(app.ctx.clientFor(source));
          const secrets = await loadSecrets(app.pool, source.name);
          let doomed: Registration[];
          if (idText !== undefined) {
            const found = await api.get(Number(idText));
            if (!found) throw new PmsyncError('NOT_FOUND', `source "${source.name}": no webhook registration #${idText}`);
            doomed = [found];
          } else doomed = ownRegistrations(await api.list(), source.name, secrets);
          for (const r of ownRegistrations(doomed, source.name, secrets)) app.redactor.add(r.token);
          if (doomed.length === 0) return out(`source "${source.name}": no pmsync webhook registrations to delete`);
          for (const r of doomed) out(`  delete  #${r.Id} ${r.EventType} ${maskUrl(r.WebhookUrl)}`);
          if (!(await confirm('These are live changes to the account. Delete?', opts.yes))) return out('nothing was changed');
          for (const r of doomed) await api.delete(r.Id);
          if (opts.all) {
            const until = new Date(app.ctx.now().getTime() + secretGraceSeconds(source) * 1000);
            await expireSecrets(app.pool, source.name, until);
            out(`deleted ${doomed.length}; the source's secret tokens stop being accepted at ${until.toISOString()}`);
          } else out(`deleted ${doomed.length}`);
        });
      } catch (err) {
        fail(err);
      }
    });
}

function deadLettersCommand(): Command {
  return new Command('dead-letters')
    .description('show refreshes that failed every attempt (with --redrive: queue them again)')
    .option('--limit <n>', 'how many to show', positive, 50)
    .option('--redrive', 'move every dead-lettered refresh back to the refresh queue')
    .action(async (opts: { limit: number; redrive?: boolean }, command: Command) => {
      try {
        const config = configFrom(command);
        // The refresh queue (pg-boss) loads only when this command runs (src/cli/main.ts).
        const { listDeadLetters, openRefreshQueue, refreshQueueCounts, refreshSuperviseSeconds } = await import('../../webhooks/queue.ts');
        const { openJobQueue, whileReading } = await import('../../queue.ts');
        await withApp(config, async (app) => {
          if (opts.redrive) {
            // Redriving writes: the queues are made sure of first, as a worker would.
            const jobs = await openJobQueue(app, {
              mode: 'work',
              superviseSeconds: refreshSuperviseSeconds(config.webhooks),
              connections: 2,
            });
            try {
              const queue = await openRefreshQueue(jobs, config.webhooks);
              out(`${await queue.redrive()} refresh(es) queued again`);
            } finally {
              await jobs.stop();
            }
            return;
          }
          await whileReading(app, async () => {
            const counts = await refreshQueueCounts(app.pool);
            out(`${counts.deadLettered} dead-lettered refresh(es)`);
            for (const d of await listDeadLetters(app.pool, opts.limit))
              out(`  ${d.failedAt.toISOString()}  ${d.source}/${d.resource}/${d.id}  ${d.error ?? ''}`);
          });
        });
      } catch (err) {
        fail(err);
      }
    });
}

export function webhooksCommand(): Command {
  return new Command('webhooks')
    .description('webhook-triggered refresh: register the receiver at the Core API, run it, inspect its dead letters')
    .addCommand(registrationCommand('register'))
    .addCommand(listCommand())
    .addCommand(deleteCommand())
    .addCommand(registrationCommand('rotate-secret'))
    .addCommand(receiveCommand())
    .addCommand(deadLettersCommand());
}
