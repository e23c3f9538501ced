/**
 * What the documentation samples test reads out of the pages: the `stormguard` commands of each ```sh
 * block, the output sample after it, its marker, and the normalisation that compares outputs by shape
 * (the conventions are written down in docs/README.md, "Writing these pages").
 */
import { type FencedBlock, fencedBlocks } from './markdown.js';

export interface Sample {
  /** The page, relative to the repository root. */
  file: string;
  /** 1-based line of the ```sh fence. */
  line: number;
  /** The block's `stormguard` commands, as written (without `npx `). */
  commands: string[];
  /** The ```text block right after it: the output of its one command. */
  output?: string[];
  fixture?: string;
  /** The exit code the commands must end with. */
  exit: number;
  /** Why the block is not run, when its marker says `skip`. */
  skip?: string;
}

/** The `stormguard …` segments of one shell line: split at `&&`, `||`, `;` and `|`, comments dropped. */
export function stormguardCommands(line: string): string[] {
  const withoutComment = line.replace(/(^|\s)#.*$/, '');
  return withoutComment
    .split(/&&|\|\||;|\|/)
    .map((s) => s.trim().replace(/^\$\s+/, ''))
    .filter((s) => /^(npx\s+)?stormguard(\s|$)/.test(s))
    .map((s) => s.replace(/^npx\s+/, ''));
}

const MARKER = /^sample:\s*(.*)$/;

/** Every ```sh block of a page that runs `stormguard`, with its output sample and marker. */
export function samplesIn(file: string, markdown: string): Sample[] {
  const blocks = fencedBlocks(markdown);
  const lines = markdown.split('\n');
  const samples: Sample[] = [];
  blocks.forEach((block, i) => {
    if (block.lang !== 'sh') return;
    const commands = block.lines.flatMap(stormguardCommands);
    if (commands.length === 0) return;
    const sample: Sample = { file, line: block.line, commands, exit: 0 };
    const next = blocks[i + 1];
    if (next?.lang === 'text' && onlyBlankBetween(lines, block, next)) {
      if (commands.length !== 1)
        throw new Error(`${file}:${block.line}: a block followed by an output sample must hold one command`);
      sample.output = trimEnd(next.lines);
    }
    const marker = block.marker === undefined ? undefined : MARKER.exec(block.marker)?.[1];
    if (marker !== undefined) applyMarker(sample, marker);
    samples.push(sample);
  });
  return samples;
}

function applyMarker(sample: Sample, marker: string): void {
  const skip = /^skip\s+(.+)$/.exec(marker);
  if (skip?.[1]) {
    sample.skip = skip[1];
    return;
  }
  for (const word of marker.split(/\s+/).filter(Boolean)) {
    const [key, value] = word.split('=');
    if (key === 'fixture' && value) sample.fixture = value;
    else if (key === 'exit' && value && /^\d+$/.test(value)) sample.exit = Number(value);
    else
      throw new Error(
        `${sample.file}:${sample.line}: unknown sample marker "${word}" (fixture=NAME, exit=N, skip WHY)`,
      );
  }
}

function onlyBlankBetween(lines: string[], a: FencedBlock, b: FencedBlock): boolean {
  const closing = a.line + a.lines.length; // 0-based index of a's closing fence
  return lines.slice(closing + 1, b.line - 1).every((l) => l.trim() === '');
}

function trimEnd(lines: string[]): string[] {
  const out = [...lines];
  while (out.length > 0 && out[out.length - 1]?.trim() === '') out.pop();
  return out;
}

/** Every `stormguard` command a page shows: in any fenced block, and in inline code. */
export function commandsShown(markdown: string): string[] {
  const inBlocks = fencedBlocks(markdown).flatMap((b) => b.lines.flatMap(stormguardCommands));
  let prose = markdown;
  for (const b of fencedBlocks(markdown)) prose = prose.replace(b.lines.join('\n'), '');
  const inline = [...prose.matchAll(/`([^`\n]+)`/g)].flatMap((m) => stormguardCommands(m[1] as string));
  return [...inBlocks, ...inline];
}

/** Lines of `$ stormguard …` in blocks that are not ```sh: samples written outside the convention. */
export function promptLinesOutsideSh(markdown: string): { line: number; text: string }[] {
  return fencedBlocks(markdown)
    .filter((b) => b.lang !== 'sh')
    .flatMap((b) =>
      b.lines
        .map((text, i) => ({ line: b.line + 1 + i, text }))
        .filter((l) => /^\$\s+(npx\s+)?stormguard\s/.test(l.text)),
    );
}

const UNIT = '(?:ms|s|m|h|d)';
const DURATIONS = new RegExp(`\\b\\d+(?:\\.\\d+)?${UNIT}\\b(?:\\s+\\d+(?:\\.\\d+)?${UNIT}\\b)*`, 'g');

/**
 * One output line, reduced to its shape: timestamps, cursors, durations and numbers each become one
 * placeholder, bars and chart strokes one glyph, and every run of spaces one space.
 */
export function normaliseLine(line: string): string {
  return line
    .replace(/\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:\.\d+)?Z/g, '<time>')
    .replace(/--after\s+\S+/g, '--after <cursor>')
    .replace(DURATIONS, '<duration>')
    .replace(/\d(?:[\d,.]*\d)?/g, '#')
    .replace(/\[[#.]+\]/g, '[bar]')
    .replace(/█+/g, '█')
    .replace(/[─│╭╮╯╰]+/g, '~')
    .replace(/\s+/g, ' ')
    .trim();
}

/**
 * Whether `actual` has the shape of `sample`, line by line; a sample line `…` stands for any number of
 * lines. Returns why not, or undefined when it matches.
 */
export function shapeMismatch(sample: string[], actual: string[]): string | undefined {
  const want = sample.map((l) => (l.trim() === '…' ? '…' : normaliseLine(l)));
  const got = trimEnd(actual).map(normaliseLine);
  const memo = new Map<string, boolean>();
  const match = (i: number, j: number): boolean => {
    const key = `${i},${j}`;
    const known = memo.get(key);
    if (known !== undefined) return known;
    let ok: boolean;
    if (i === want.length) ok = j === got.length;
    else if (want[i] === '…') ok = match(i + 1, j) || (j < got.length && match(i, j + 1));
    else ok = j < got.length && want[i] === got[j] && match(i + 1, j + 1);
    memo.set(key, ok);
    return ok;
  };
  if (match(0, 0)) return undefined;
  // Point at the first line that differs, ignoring `…` for the report.
  for (let i = 0, j = 0; i < want.length; i++, j++) {
    if (want[i] === '…') return `the output differs after a "…" line; output shape:\n${got.join('\n')}`;
    if (want[i] !== got[j])
      return `line ${i + 1} differs:\n  sample: ${want[i]}\n  output: ${got[j] ?? '(no line)'}\noutput shape:\n${got.join('\n')}`;
  }
  return `the output has ${got.length - want.length} more lines than the sample:\n${got.slice(want.length).join('\n')}`;
}
