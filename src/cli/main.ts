#!/usr/bin/env node
import { run } from './program.js';

// The first Ctrl-C asks long-running commands (watch, replay) to stop cleanly; a second one kills.
const interrupt = new AbortController();
process.once('SIGINT', () => interrupt.abort());

process.exitCode = await run(process.argv.slice(2), {
  stdout: process.stdout,
  stderr: process.stderr,
  signal: interrupt.signal,
});
