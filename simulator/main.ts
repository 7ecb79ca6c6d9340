/**
 * Entry point of the simulator: `npm run simulator -- [options]`, or
 * `node simulator/main.ts [options]` (the simulator image's entry point).
 */
import { simulatorCommand } from './cli.ts';

// Usage errors exit 2, as pmsync's own commands do.
const USAGE = 2;

await simulatorCommand()
  .exitOverride((err) => process.exit(err.exitCode === 0 ? 0 : USAGE))
  .showHelpAfterError()
  .parseAsync(process.argv);
