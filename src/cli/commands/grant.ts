import { Command } from 'commander';
import pg from 'pg';
import type { App } from '../../app.ts';
import {
  applyStatements,
  existingRelations,
  grantStatements,
  revokeStatements,
  roleInfo,
  unmanagedReaders,
  type Relations,
} from '../../db/access.ts';
import { PmsyncError } from '../../errors.ts';
import { forgetGrant, listGrants, saveGrant } from '../../state/access-grants.ts';
import { storedSources } from '../../state/sources.ts';
import { allResourceTables } from '../../sync/streams/index.ts';
import { configFrom, fail, withApp } from '../shared.ts';

interface GrantOptions {
  role: string;
  source?: string[];
  revoke?: boolean;
}

/** A role name PostgreSQL keeps whole and that is not one of its own. */
function checkRole(role: string): void {
  if (role.trim() === '' || Buffer.byteLength(role) > 63 || role.startsWith('pg_')) {
    throw new PmsyncError('USAGE', `--role "${role}": give a role name of 1 to 63 bytes that does not start with "pg_"`);
  }
}

/** --source names a configured source, or one whose rows the database already holds. */
async function checkSources(app: App, names: string[]): Promise<void> {
  const known = new Set([...app.config.sources.map((s) => s.name), ...(await storedSources(app.pool)).map((s) => s.source)]);
  const unknown = names.filter((n) => !known.has(n));
  if (unknown.length > 0) {
    throw new PmsyncError(
      'USAGE',
      `--source ${unknown.map((u) => `"${u}"`).join(', ')}: no such source in the config or the database; known: ${[...known].sort().join(', ') || 'none'}`,
    );
  }
}

async function grant(app: App, opts: GrantOptions, relations: Relations): Promise<void> {
  const sources = opts.source && opts.source.length > 0 ? [...new Set(opts.source)].sort() : null;
  if (sources) await checkSources(app, sources);
  const info = await roleInfo(app.pool, opts.role);
  if (sources && info.bypassesRls) {
    throw new PmsyncError(
      'USAGE',
      `role "${opts.role}" is a superuser or has BYPASSRLS, so row-level security cannot limit it to sources: grant a role without them`,
    );
  }
  const statements = grantStatements(opts.role, sources, relations);
  if (!info.exists) statements.unshift(`CREATE ROLE ${pg.escapeIdentifier(opts.role)} NOLOGIN`);
  await applyStatements(app.pool, statements);
  await saveGrant(app.pool, { role: opts.role, sources, createdRole: !info.exists });
  process.stdout.write(
    `role ${opts.role}: SELECT on ${relations.tables.length} tables and ${relations.views.length} views, ` +
      (sources ? `rows of ${sources.join(', ')} only (row-level security)` : 'rows of every source') +
      '; no access to pmsync.*\n',
  );
  if (!info.exists) {
    process.stdout.write(
      `created role ${opts.role} (NOLOGIN): let it log in with ALTER ROLE ${pg.escapeIdentifier(opts.role)} LOGIN PASSWORD '...'\n`,
    );
  }
  const grants = (await listGrants(app.pool)).map((g) => g.role);
  const others = await unmanagedReaders(app.pool, relations, grants);
  if (others.length > 0) {
    process.stderr.write(
      `warning: ${others.join(', ')} may read these tables but no pmsync grant gives them a row-level policy, so they now see no rows: ` +
        `run pmsync grant --role NAME for each (with --source to limit it)\n`,
    );
  }
}

async function revoke(app: App, opts: GrantOptions, relations: Relations): Promise<void> {
  const recorded = await forgetGrant(app.pool, opts.role);
  const info = await roleInfo(app.pool, opts.role);
  if (!info.exists) {
    process.stdout.write(`role ${opts.role} does not exist${recorded ? ' (its record is removed)' : ''}: nothing to revoke\n`);
    return;
  }
  const statements = revokeStatements(opts.role, relations);
  if (recorded?.createdRole) statements.push(`DROP ROLE ${pg.escapeIdentifier(opts.role)}`);
  try {
    await applyStatements(app.pool, statements);
  } catch (err) {
    // A role pmsync made may since own objects or hold other privileges: keep it, revoke the rest.
    if ((err as { code?: string }).code !== '2BP01' || !recorded?.createdRole) throw err;
    await applyStatements(app.pool, statements.slice(0, -1));
    process.stdout.write(`role ${opts.role}: access revoked; the role is kept because other objects depend on it\n`);
    return;
  }
  process.stdout.write(`role ${opts.role}: access revoked${recorded?.createdRole ? ', and the role pmsync had created is dropped' : ''}\n`);
}

export function grantCommand(): Command {
  return new Command('grant')
    .description(
      "give a database role read access to the analysts' tables, history tables and views (never pmsync.*), " +
        "optionally only some sources' rows through row-level security; idempotent",
    )
    .requiredOption('--role <name>', 'the role (created NOLOGIN when it does not exist)')
    .option('--source <names...>', "only these sources' rows")
    .option('--revoke', "take the role's access back (and drop the role if pmsync created it)")
    .addHelpText(
      'after',
      `
Run it again after changing the sources: the new grant replaces the old one. Tables a later
migration adds are covered at once (pmsync re-applies every grant after migrating).
Row-level security is enabled on every resource and history table: a role that reads them
without a pmsync grant sees no rows from then on (the command names such roles).`,
    )
    .action(async (opts: GrantOptions, cmd: Command) => {
      try {
        checkRole(opts.role);
        if (opts.revoke && opts.source?.length)
          throw new PmsyncError('USAGE', "--revoke takes back all of a role's access: leave out --source");
        const config = configFrom(cmd);
        await withApp(config, async (app) => {
          const relations = await existingRelations(app.pool, allResourceTables());
          if (opts.revoke) await revoke(app, opts, relations);
          else await grant(app, opts, relations);
        });
      } catch (err) {
        fail(err);
      }
    });
}
