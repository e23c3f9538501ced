// Fails when a test leaves a promise floating: a statement whose value is a promise that nobody awaits,
// returns or handles. Such a test passes before the promise settles, so whatever it asserts can never fail
// (an un-awaited `fc.assert(fc.asyncProperty(…))`, `expect(p).rejects.toThrow()`, a helper that returns a
// promise). Biome's noFloatingPromises does not see types declared in dependencies, so this check asks the
// TypeScript compiler, with the project's own tsconfig.json, for the type of every expression statement.
//
// A statement is fine when its value is not thenable, or it is `void …` (an explicit "not waiting"), an
// assignment (`cached ??= start()` keeps the promise), or it ends in `.catch(handler)` /
// `.then(onFulfilled, onRejected)`.
//
// Usage: node scripts/check-floating-promises.mjs [files…]   (default: every test file of the project)
import { dirname, relative, resolve } from 'node:path';
import ts from 'typescript';

const TEST_FILE = /(\.test\.ts|\.case\.ts)$|(^|\/)tests\//;

const root = process.cwd();
const configPath = ts.findConfigFile(root, ts.sys.fileExists, 'tsconfig.json');
if (!configPath) {
  console.error('check-floating-promises: no tsconfig.json found');
  process.exit(2);
}
const { config, error } = ts.readConfigFile(configPath, ts.sys.readFile);
if (error) {
  console.error(ts.flattenDiagnosticMessageText(error.messageText, '\n'));
  process.exit(2);
}
const parsed = ts.parseJsonConfigFileContent(config, ts.sys, dirname(configPath));
const only = process.argv.slice(2).map((file) => resolve(root, file));
const program = ts.createProgram(only.length > 0 ? only : parsed.fileNames, parsed.options);
const checker = program.getTypeChecker();

function isThenable(type) {
  if (type.isUnion()) return type.types.some(isThenable);
  const then = checker.getPropertyOfType(type, 'then');
  if (!then) return false;
  const thenType = checker.getTypeOfSymbol(then);
  return thenType.getCallSignatures().length > 0;
}

function isHandled(expression) {
  let e = expression;
  while (ts.isParenthesizedExpression(e)) e = e.expression;
  if (ts.isVoidExpression(e) || ts.isAwaitExpression(e)) return true;
  if (
    ts.isBinaryExpression(e) &&
    e.operatorToken.kind >= ts.SyntaxKind.FirstAssignment &&
    e.operatorToken.kind <= ts.SyntaxKind.LastAssignment
  )
    return true;
  if (ts.isCallExpression(e) && ts.isPropertyAccessExpression(e.expression)) {
    const method = e.expression.name.text;
    if (method === 'catch' && e.arguments.length >= 1) return true;
    if (method === 'then' && e.arguments.length >= 2) return true;
  }
  return false;
}

function isProjectTest(path) {
  return !path.startsWith('..') && !path.includes('node_modules') && TEST_FILE.test(path);
}

const problems = [];
for (const file of program.getSourceFiles()) {
  if (file.isDeclarationFile) continue;
  const path = relative(root, file.fileName);
  if (only.length > 0 ? !only.includes(resolve(file.fileName)) : !isProjectTest(path)) continue;
  const visit = (node) => {
    if (ts.isExpressionStatement(node) && !isHandled(node.expression)) {
      if (isThenable(checker.getTypeAtLocation(node.expression))) {
        const { line, character } = file.getLineAndCharacterOfPosition(node.expression.getStart(file));
        const text = node.expression.getText(file).split('\n')[0].slice(0, 80);
        problems.push(`${path}:${line + 1}:${character + 1}: a promise nobody awaits: ${text}`);
      }
    }
    ts.forEachChild(node, visit);
  };
  visit(file);
}

if (problems.length > 0) {
  console.error(problems.join('\n'));
  console.error(
    `\n${problems.length} floating promise(s) in tests: await them (make the test async), return them, or write \`void\` when not waiting is the point.`,
  );
  process.exit(1);
}
