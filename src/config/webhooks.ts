/**
 * The `webhooks` section of the config file: the receiver's limits and the
 * refresh queue's retry policy. One queue serves every source, so these are
 * global; per-source settings (expected TenantId, secret grace period) live in
 * the source's `webhook` object. Parsed with the rest of the configuration in
 * load.ts.
 */
import { z } from 'zod';
import { strictObject } from '../strict-schema.ts';

/** Largest delivery body accepted; the spec's six string fields fit in well under 1 KiB. */
export const DEFAULT_MAX_BODY_BYTES = 64 * 1024;
/**
 * A refresh still running after this long is presumed lost with its worker
 * (killed, crashed) and is retried. It must exceed one refresh's worst case:
 * the client's own retries give up after 120 s.
 */
export const DEFAULT_EXPIRE_SECONDS = 300;
/** The old secret token stays accepted this long after a rotation: longer than the API's 10 x 30 s delivery retries. */
export const DEFAULT_SECRET_GRACE_SECONDS = 3600;

export const webhookSettingsSchema = strictObject({
  /**
   * What a notification does. auto: it marks its stream for a check, which
   * reads every change since the last one (N notifications in one debounce
   * window cost ceil(N/100) requests), when serve schedules that stream by
   * budget; otherwise (a stream pinned to cron, or read by full refresh) its
   * record is fetched alone. record: every notification fetches its record.
   */
  refresh: z.enum(['auto', 'record']).default('auto'),
  /** Refreshes run at once by one process's worker. */
  concurrency: z.number().int().min(1).max(32).default(2),
  /** Attempts per refresh before it is dead-lettered. */
  maxAttempts: z.number().int().min(1).max(50).default(8),
  /** Delay before the first retry; it doubles with each attempt, up to an hour. */
  retryDelaySeconds: z.number().int().min(1).max(3600).default(30),
  expireSeconds: z.number().int().min(2).max(86_400).default(DEFAULT_EXPIRE_SECONDS),
  /** Received events are kept this long for deduplication and audit. */
  eventRetentionDays: z.number().int().min(1).max(3650).default(7),
  maxBodyBytes: z
    .number()
    .int()
    .min(1024)
    .max(1024 * 1024)
    .default(DEFAULT_MAX_BODY_BYTES),
}).prefault({});

export type WebhookSettings = z.infer<typeof webhookSettingsSchema>;

/** Parses `webhooks` from the config file input, adding any problem to `problems`. */
export function parseWebhookSettings(fileInput: unknown, where: string, problems: string[]): WebhookSettings {
  const raw = fileInput !== null && typeof fileInput === 'object' ? (fileInput as Record<string, unknown>).webhooks : undefined;
  const parsed = webhookSettingsSchema.safeParse(raw);
  if (parsed.success) return parsed.data;
  for (const issue of parsed.error.issues)
    problems.push(`${where}: ${['webhooks', ...issue.path.map(String)].join('.')}: ${issue.message}`);
  return webhookSettingsSchema.parse(undefined);
}

/** How long a source's previous webhook token stays accepted after a rotation. */
export function secretGraceSeconds(source: { webhook: { secretGraceSeconds?: number } }): number {
  return source.webhook.secretGraceSeconds ?? DEFAULT_SECRET_GRACE_SECONDS;
}
