// The suite as scripts run it: vitest's usual report, then one line a
// script can count, "vitest: N passed, N failed, N skipped"; the exit code
// is vitest's. $KAFKAIQ_BIN defaults to this repository's build/kafkaiq.
// Arguments go to vitest (a file filter, say).
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
const built = join(here, '..', '..', 'build', 'kafkaiq');
const env = { ...process.env };
if (!env.KAFKAIQ_BIN && existsSync(built)) env.KAFKAIQ_BIN = built;

const out = mkdtempSync(join(tmpdir(), 'kafkaiq-vitest-'));
const report = join(out, 'report.json');
const vitest = join(here, 'node_modules', 'vitest', 'vitest.mjs');
const args = [vitest, 'run', '--reporter=default', '--reporter=json', `--outputFile.json=${report}`, ...process.argv.slice(2)];
const child = spawn(process.execPath, args, { cwd: here, env, stdio: 'inherit' });
const code = await new Promise((resolve) => child.on('close', (c, signal) => resolve(c ?? (signal ? 1 : 0))));

let passed = 0;
let failed = 0;
let skipped = 0;
if (existsSync(report)) {
  const r = JSON.parse(readFileSync(report, 'utf8'));
  passed = r.numPassedTests;
  failed = r.numFailedTests;
  skipped = r.numPendingTests + r.numTodoTests;
}
// a file that failed before its tests ran (a hook, an import) has no failed test to count
if (code !== 0 && failed === 0) failed = 1;
rmSync(out, { recursive: true, force: true });
console.log(`vitest: ${passed} passed, ${failed} failed, ${skipped} skipped`);
process.exitCode = code;
