#!/usr/bin/env node
// Runs the TypeScript entry point directly: Node 24 strips types natively. The command line runs
// in a worker thread with pmsync's own heap limits (src/cli/launch.ts).
import { launch } from '../src/cli/launch.ts';

launch(new URL('../src/cli/main.ts', import.meta.url));
