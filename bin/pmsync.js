#!/usr/bin/env -S MALLOC_MMAP_THRESHOLD_=131072 node --max-semi-space-size=8 --heap-growing-percent=100
// pmsync's command line (src/cli/main.ts), started with pmsync's heap flags and glibc's mmap threshold
// (src/cli/process.ts explains them).
// Node 24 runs the TypeScript directly: it strips the types.
import '../src/cli/main.ts';
