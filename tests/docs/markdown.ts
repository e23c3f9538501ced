/**
 * Just enough Markdown for the documentation checks: fenced blocks, headings outside them, GitHub's heading
 * anchors, and the table of contents each page keeps between `<!-- toc -->` and `<!-- /toc -->`.
 */

export interface FencedBlock {
  /** The info string's first word (`sh`, `text`, `ts`), or '' for a bare fence. */
  lang: string;
  /** The lines between the fences. */
  lines: string[];
  /** 1-based line of the opening fence. */
  line: number;
  /** The HTML comment on the line right above the opening fence (without `<!--`/`-->`), if any. */
  marker?: string;
}

export interface Heading {
  level: number;
  text: string;
  line: number;
}

export function fencedBlocks(markdown: string): FencedBlock[] {
  const lines = markdown.split('\n');
  const blocks: FencedBlock[] = [];
  let open: FencedBlock | undefined;
  lines.forEach((line, i) => {
    if (!line.startsWith('```')) {
      open?.lines.push(line);
      return;
    }
    if (open) {
      blocks.push(open);
      open = undefined;
      return;
    }
    const above = i > 0 ? /^<!--\s*(.*?)\s*-->$/.exec(lines[i - 1] ?? '') : null;
    open = { lang: line.slice(3).trim().split(/\s+/)[0] ?? '', lines: [], line: i + 1 };
    if (above?.[1] !== undefined) open.marker = above[1];
  });
  if (open) throw new Error(`line ${open.line}: a fenced block is never closed`);
  return blocks;
}

export function headings(markdown: string): Heading[] {
  const out: Heading[] = [];
  let fenced = false;
  markdown.split('\n').forEach((line, i) => {
    if (line.startsWith('```')) fenced = !fenced;
    const m = fenced ? null : /^(#{1,6}) (.+)$/.exec(line);
    if (m?.[1] && m[2]) out.push({ level: m[1].length, text: m[2].trim(), line: i + 1 });
  });
  return out;
}

/** GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens. */
export function slug(heading: string): string {
  return heading
    .toLowerCase()
    .replace(/[^\p{L}\p{N}_\- ]/gu, '')
    .replace(/ /g, '-');
}

/** Every anchor of a page, numbered as GitHub numbers repeated headings (`-1`, `-2`). */
export function anchors(markdown: string): string[] {
  const seen = new Map<string, number>();
  return headings(markdown).map((h) => {
    const base = slug(h.text);
    const n = seen.get(base) ?? 0;
    seen.set(base, n + 1);
    return n === 0 ? base : `${base}-${n}`;
  });
}

const TOC_START = '<!-- toc -->';
const TOC_END = '<!-- /toc -->';

/** The table of contents for a page's `##` and `###` headings. */
export function renderToc(markdown: string): string {
  const all = headings(markdown);
  const ids = anchors(markdown);
  return all
    .map((h, i) => ({ h, id: ids[i] }))
    .filter(({ h }) => h.level === 2 || h.level === 3)
    .map(({ h, id }) => `${'  '.repeat(h.level - 2)}- [${h.text.replace(/[[\]]/g, '\\$&')}](#${id})`)
    .join('\n');
}

/** The page with its table of contents rewritten; a page without the markers is returned unchanged. */
export function withToc(markdown: string): string {
  const start = markdown.search(/^<!-- toc -->$/m);
  if (start === -1) return markdown;
  const end = markdown.indexOf(`\n${TOC_END}`, start) + 1;
  const after = end === 0 ? start + TOC_START.length : end + TOC_END.length;
  return `${markdown.slice(0, start)}${TOC_START}\n\n${renderToc(markdown)}\n\n${TOC_END}${markdown.slice(after)}`;
}
