/**
 * The import rules of design §8 (.dependency-cruiser.cjs), checked with dependency-cruiser's API: it prints
 * each violation (rule, from → to) and exits 1 when there is one, 0 otherwise.
 *
 *   node scripts/check-imports.mjs                      # src/, with .dependency-cruiser.cjs
 *   node scripts/check-imports.mjs --config <file> <path>…
 *   node scripts/check-imports.mjs --without-exceptions  # the temporary exceptions count as violations
 *
 * Through the API rather than the `depcruise` command, which refuses to start on Node 20, a version this
 * package supports (engines) and runs its checks on.
 */
import { resolve } from 'node:path';
import { cruise } from 'dependency-cruiser';
import extractDepcruiseOptions from 'dependency-cruiser/config-utl/extract-depcruise-options';
import extractTSConfig from 'dependency-cruiser/config-utl/extract-ts-config';

const args = process.argv.slice(2);
let configFile = '.dependency-cruiser.cjs';
let withExceptions = true;
const paths = [];
for (let i = 0; i < args.length; i++) {
  if (args[i] === '--config') configFile = args[++i];
  else if (args[i] === '--without-exceptions') withExceptions = false;
  else paths.push(args[i]);
}
if (paths.length === 0) paths.push('src');

const options = await extractDepcruiseOptions(resolve(configFile));
if (!withExceptions) options.knownViolations = [];
const tsConfig = options.tsConfig?.fileName ? extractTSConfig(options.tsConfig.fileName) : undefined;
const result = await cruise(
  paths,
  { ...options, validate: true },
  undefined,
  tsConfig ? { tsConfig } : undefined,
);
const { summary } = result.output;

const describe = (v) =>
  v.cycle ? [v.from, ...v.cycle.map((step) => step.name)].join(' → ') : `${v.from} → ${v.to}`;
const failing = summary.violations.filter((v) => v.rule.severity === 'error');
const tolerated = summary.violations.filter((v) => v.rule.severity !== 'error');
for (const v of failing) console.error(`${v.rule.name}: ${describe(v)}`);
for (const v of tolerated) console.log(`temporary exception, ${v.rule.name}: ${describe(v)}`);

// An exception that matches no violation any more is stale: the move it waited for is done.
const stale = (options.knownViolations ?? []).filter(
  (known) =>
    !tolerated.some((v) =>
      known.cycle
        ? v.rule.name === known.rule.name &&
          v.cycle?.length === known.cycle.length &&
          known.cycle.every(({ name }) => v.cycle.some((step) => step.name === name))
        : v.rule.name === known.rule.name && v.from === known.from && v.to === known.to,
    ),
);
for (const known of stale) {
  const what = known.cycle ? known.cycle.map(({ name }) => name).join(' → ') : `${known.from} → ${known.to}`;
  console.error(`stale temporary exception, ${known.rule.name}: ${what} (remove it from ${configFile})`);
}

const counts = `${summary.totalCruised} modules, ${summary.totalDependenciesCruised} imports`;
if (failing.length > 0 || stale.length > 0) {
  console.error(
    `\n${failing.length} import-rule violation(s), ${stale.length} stale exception(s) in ${counts} (rules: ${configFile})`,
  );
  process.exit(1);
}
console.log(`import rules: ${counts}, no violation (${tolerated.length} temporary exception(s))`);
