#!/usr/bin/env node
import { run } from './program.js';

// A reader that stops early (`stormguard simulate | head -1`) closes the pipe: the output it wanted is
// out, so that ends the command quietly instead of with an EPIPE stack trace. Other errors stay fatal.
for (const stream of [process.stdout, process.stderr])
  stream.on('error', (error: NodeJS.ErrnoException) => {
    if (error.code !== 'EPIPE') throw error;
    process.exit(process.exitCode ?? 0);
  });

// The first Ctrl-C asks long-running commands (watch, replay) to stop cleanly; a second one kills.
const interrupt = new AbortController();
process.once('SIGINT', () => interrupt.abort());

process.exitCode = await run(process.argv.slice(2), {
  stdout: process.stdout,
  stderr: process.stderr,
  signal: interrupt.signal,
});
