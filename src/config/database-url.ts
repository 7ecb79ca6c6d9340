/**
 * DATABASE_URL: a postgres:// URL whose TLS files can be read, its sslmode
 * given libpq's meaning.
 */
import { readSecretFile } from './secrets.ts';

/** DATABASE_URL as pmsync connects with it; its problems are added to `problems`. */
export function checkDatabaseUrl(databaseUrl: string, problems: string[]): string {
  try {
    const u = new URL(databaseUrl);
    if (!/^postgres(ql)?:$/.test(u.protocol)) problems.push('DATABASE_URL: must start with postgres:// or postgresql://');
    else {
      const url = withLibpqSslModes(databaseUrl, u);
      problems.push(...tlsFileProblems(u));
      return url;
    }
  } catch {
    problems.push('DATABASE_URL: not a valid URL (expected postgres://user:password@host:5432/db)');
  }
  return databaseUrl;
}

/**
 * node-postgres 8 reads `sslmode=prefer`, `require` and `verify-ca` as
 * `verify-full` and prints a multi-line warning that this will change. pmsync
 * gives them libpq's meaning now (the meaning psql and node-postgres 9 give
 * them; docs/operations.md, "Database connection"), which also keeps the
 * warning out of every command's output. `verify-full`, `disable` and
 * node-postgres' own `no-verify` mean the same either way and are left as
 * written, as is a URL that already says `uselibpqcompat`.
 */
function withLibpqSslModes(written: string, url: URL): string {
  const mode = url.searchParams.get('sslmode');
  if (mode === null || !['prefer', 'require', 'verify-ca'].includes(mode) || url.searchParams.has('uselibpqcompat')) return written;
  url.searchParams.set('uselibpqcompat', 'true');
  return url.href;
}

/** What each TLS file parameter of DATABASE_URL holds, for messages about it. */
const TLS_FILES: Record<string, string> = {
  sslrootcert: "the CA certificate that signed the database server's certificate",
  sslcert: 'the client certificate pmsync shows the database server',
  sslkey: "the client certificate's private key",
};

/**
 * The files DATABASE_URL names are read when pmsync connects; one that is
 * missing or unreadable is said here, with every other problem, instead of
 * as a failed connection. `verify-ca` checks against `sslrootcert` alone, so
 * it needs one (as in libpq).
 */
function tlsFileProblems(url: URL): string[] {
  const problems: string[] = [];
  for (const [key, what] of Object.entries(TLS_FILES)) {
    const path = url.searchParams.get(key);
    if (path === null) continue;
    if (key === 'sslrootcert' && path === 'system') {
      problems.push(
        'DATABASE_URL: sslrootcert=system is not supported: leave sslrootcert out to trust the usual public CAs, or name the CA file (sslrootcert=/path/to/ca.pem)',
      );
      continue;
    }
    readSecretFile(path, `DATABASE_URL ${key}`, what, problems);
  }
  if (url.searchParams.get('sslmode') === 'verify-ca' && !url.searchParams.has('sslrootcert')) {
    problems.push(
      'DATABASE_URL: sslmode=verify-ca checks the certificate against the CA in sslrootcert: add sslrootcert=/path/to/ca.pem, or use sslmode=verify-full',
    );
  }
  return problems;
}
