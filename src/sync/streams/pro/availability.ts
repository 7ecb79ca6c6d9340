import type { ProSnapshotStream } from './stream.ts';

/**
 * Open capacity: for every event type, the providers offering it and each
 * provider's open slots over the configured horizon, captured as append-only
 * snapshots (src/sync/pro-availability.ts).
 */
const availability: ProSnapshotStream = {
  kind: 'pro-snapshot',
  resource: 'availability',
  table: { name: 'pro_availability_slots' },
};

export default availability;
