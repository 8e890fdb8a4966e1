/** `npm run eval`: the relevance evaluation on the configured provider (see cli/eval.ts). */
import { runEval } from './eval.js';

process.exitCode = await runEval(process.argv.slice(2), { stdout: process.stdout, stderr: process.stderr });
