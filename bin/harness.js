#!/usr/bin/env node
// The `harness` command: runs the TypeScript CLI through tsx, so it works straight after
// `npm install`, without a build step.
import process from 'node:process';
import { register } from 'tsx/esm/api';

register();
const { main } = await import('../cli/main');
process.exitCode = await main(process.argv.slice(2));
