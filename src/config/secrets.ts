/**
 * Secrets the configuration reads from elsewhere: the `{ "env": "NAME" }` and
 * `{ "file": "/path" }` values of the config file, and the bearer token of
 * serve's status page. A secret file is read at every load, so a rotated
 * mounted secret reaches a running `serve` at its next reload (src/serve/reload.ts
 * watches the files secretFiles names). A problem says where a secret was to be
 * found and what it holds, never its value.
 */
import { readFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';

const SECRET_WHAT: Record<string, string> = {
  apikey: "the source's gateway key",
  password: "the API user's password",
  token: "the source's Pro API token",
};

/** Where `{ "env" }` and `{ "file" }` secrets are read: the environment, and paths relative to the config file's folder. */
export interface SecretLookup {
  env: NodeJS.ProcessEnv;
  dir: string;
}

/** A source entry with its apikey, password and token read; a value of another shape is left for the schema to refuse. */
export function resolveSecrets(
  source: Record<string, unknown>,
  where: string,
  lookup: SecretLookup,
  problems: string[],
): Record<string, unknown> {
  const out: Record<string, unknown> = { ...source };
  for (const key of ['apikey', 'password', 'token']) {
    const v = out[key];
    if (!v || typeof v !== 'object') continue;
    out[key] = resolveSecret(v, `${where}.${key}`, SECRET_WHAT[key]!, lookup, problems) ?? v;
  }
  return out;
}

/** The value of a `{ "env" }` or `{ "file" }` secret ('' with a problem when it cannot be read); undefined for any other shape. */
export function resolveSecret(v: object, where: string, what: string, lookup: SecretLookup, problems: string[]): string | undefined {
  if ('env' in v && typeof v.env === 'string') {
    const value = lookup.env[v.env];
    if (!value) problems.push(`${where}: environment variable ${v.env} is not set (it holds ${what})`);
    return value ?? '';
  }
  if ('file' in v && typeof v.file === 'string') return readSecretFile(resolve(lookup.dir, v.file), where, what, problems);
  return undefined;
}

/**
 * A secret file's value, without its trailing newline (`echo` and most editors
 * add one; Kubernetes Secrets keep what they were given). A file that cannot
 * be read or holds nothing is a problem naming its path and what it holds,
 * never anything it contains.
 */
export function readSecretFile(path: string, where: string, what: string, problems: string[]): string {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    const why =
      code === 'ENOENT'
        ? 'does not exist'
        : code === 'EACCES'
          ? 'cannot be read (permission denied)'
          : `cannot be read (${code ?? 'error'})`;
    problems.push(`${where}: file ${path} ${why} (it holds ${what})`);
    return '';
  }
  const value = text.replace(/[\r\n]+$/, '');
  if (value === '') problems.push(`${where}: file ${path} is empty (it should hold ${what})`);
  return value;
}

/**
 * The secret files a config file refers to, resolved, in the order they are
 * named: what `serve` watches besides the file itself. Entries that are not
 * well formed are skipped (the load reports them).
 */
export function secretFiles(fileInput: unknown, configFile: string): string[] {
  const entries = (fileInput as { sources?: unknown } | null)?.sources;
  const dir = dirname(resolve(configFile));
  const out: string[] = [];
  const add = (v: unknown) => {
    if (v && typeof v === 'object' && 'file' in v && typeof v.file === 'string') out.push(resolve(dir, v.file));
  };
  const privacyKey = (container: unknown) => {
    const p = container && typeof container === 'object' ? (container as { privacy?: unknown }).privacy : undefined;
    if (p && typeof p === 'object') add((p as { key?: unknown }).key);
  };
  privacyKey(fileInput);
  if (!Array.isArray(entries)) return out;
  for (const entry of entries) {
    if (!entry || typeof entry !== 'object') continue;
    for (const key of ['apikey', 'password', 'token']) add((entry as Record<string, unknown>)[key]);
    privacyKey(entry);
  }
  return out;
}

/** The shortest bearer token accepted: a guessable one would protect nothing. */
const MIN_STATUS_TOKEN_LENGTH = 16;

/**
 * The bearer token of the status page and /metrics, from PMSYNC_STATUS_TOKEN
 * or the file PMSYNC_STATUS_TOKEN_FILE names (a mounted Docker or Kubernetes
 * secret); undefined when neither is set (an empty value counts as unset).
 * Problems never quote the token.
 */
export function readStatusToken(env: NodeJS.ProcessEnv, problems: string[]): string | undefined {
  const inline = env.PMSYNC_STATUS_TOKEN || undefined;
  const file = env.PMSYNC_STATUS_TOKEN_FILE || undefined;
  if (inline !== undefined && file !== undefined) {
    problems.push('PMSYNC_STATUS_TOKEN and PMSYNC_STATUS_TOKEN_FILE are both set: set only one of them');
    return undefined;
  }
  if (inline === undefined && file === undefined) return undefined;
  const where = inline !== undefined ? 'PMSYNC_STATUS_TOKEN' : 'PMSYNC_STATUS_TOKEN_FILE';
  const token = inline ?? readSecretFile(resolve(file!), where, 'the bearer token of the status page and /metrics', problems);
  if (token === '') return undefined;
  // It travels in an Authorization header: visible ASCII, no spaces.
  if (!/^[\x21-\x7e]+$/.test(token)) {
    problems.push(
      `${where}: the token must be printable ASCII without spaces or line breaks (it is sent as "Authorization: Bearer <token>")`,
    );
  } else if (token.length < MIN_STATUS_TOKEN_LENGTH) {
    problems.push(
      `${where}: the token is shorter than ${MIN_STATUS_TOKEN_LENGTH} characters: use a random one, e.g. the output of "openssl rand -hex 32"`,
    );
  }
  return token;
}
