/**
 * `npm run demo`: runs the demo (scripts/demo-main.ts) the way bin/pmsync.js
 * runs the CLI, in a worker thread with pmsync's heap limits (src/cli/launch.ts).
 */
import { launch } from '../src/cli/launch.ts';

launch(new URL('./demo-main.ts', import.meta.url));
