// The docs stay findable. Code comments, READMEs and the other docs point into docs/decisions.md by
// heading name (the file name followed by one or more quoted headings) or by anchor (`#slug`); each
// such reference must name a heading that exists, so that a reader finds the decision it promises.
// And every relative link of README.md and docs/*.md must reach a file (and, for a Markdown file,
// the heading its anchor names).
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';

const ROOT = resolve(import.meta.dirname, '..');
const DECISIONS = 'docs/decisions.md';
/** This file names the pattern it looks for in its comments and tests; it is not a reference. */
const SELF = relative(ROOT, import.meta.filename);

/** Tracked files and new ones not ignored: what the next commit will hold. */
function repositoryFiles(): string[] {
  return execFileSync('git', ['ls-files', '-z', '--cached', '--others', '--exclude-standard'], {
    cwd: ROOT,
    encoding: 'utf8',
  })
    .split('\0')
    .filter((file) => file !== '' && !/\.(png|jpg|ico|gif|woff2?|gz|br|tgz|pdf)$/.test(file));
}

function read(file: string): string | undefined {
  try {
    return readFileSync(join(ROOT, file), 'utf8');
  } catch {
    return undefined; // deleted in the work tree, or a directory (submodule)
  }
}

/** Markdown text without fenced code blocks (their lines are kept empty, so line numbers hold). */
function withoutFences(text: string): string {
  let inFence = false;
  return text
    .split('\n')
    .map((line) => {
      if (/^\s*(```|~~~)/.test(line)) {
        inFence = !inFence;
        return '';
      }
      return inFence ? '' : line;
    })
    .join('\n');
}

/** GitHub's anchor of a heading: lower case, punctuation dropped, spaces to hyphens. */
export function slug(heading: string): string {
  return heading
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{N}\s_-]/gu, '')
    .replace(/\s/g, '-');
}

/** The headings of a Markdown text, and their anchors (a repeated anchor gets `-1`, `-2`, …). */
export function headingsOf(text: string): { names: Set<string>; anchors: Set<string> } {
  const names = new Set<string>();
  const anchors = new Set<string>();
  const seen = new Map<string, number>();
  for (const line of withoutFences(text).split('\n')) {
    const match = /^#{1,6}\s+(.*?)\s*#*\s*$/.exec(line);
    if (match === null) continue;
    const name = match[1]!;
    names.add(name);
    const base = slug(name);
    const count = seen.get(base) ?? 0;
    seen.set(base, count + 1);
    anchors.add(count === 0 ? base : `${base}-${count}`);
  }
  return { names, anchors };
}

export interface Reference {
  line: number;
  heading?: string;
  anchor?: string;
}

/**
 * The references to decisions.md in `text`: `decisions.md#anchor`, and `decisions.md` followed
 * (after an optional backtick, bracket, parenthesis, comma or colon) by quoted headings joined by
 * commas or "and". A reference may run over lines: line breaks and the comment markers that start
 * the next line (`//`, `*`, `#`) read as one space.
 */
export function referencesIn(text: string): Reference[] {
  const references: Reference[] = [];
  const pattern = /decisions\.md/g;
  for (let found = pattern.exec(text); found !== null; found = pattern.exec(text)) {
    const line = text.slice(0, found.index).split('\n').length;
    const rest = text.slice(found.index + found[0].length, found.index + found[0].length + 400);
    const anchor = /^#([^\s)\]"'`>]+)/.exec(rest);
    if (anchor !== null) {
      references.push({ line, anchor: anchor[1]! });
      continue;
    }
    let after = rest.replace(/[ \t]*\r?\n[ \t]*(?:\/\/+|\*(?!\*)|#+)?[ \t]*/g, ' ');
    const first = /^[`\])]*\)?[ \t]*[,:]?[ \t]*\(?"([^"\n]+)"/.exec(after);
    if (first === null) continue;
    references.push({ line, heading: first[1]! });
    after = after.slice(first[0].length);
    for (let next = /^\s*(?:,\s*(?:and\s+)?|and\s+)"([^"\n]+)"/.exec(after); next !== null;) {
      references.push({ line, heading: next[1]! });
      after = after.slice(next[0].length);
      next = /^\s*(?:,\s*(?:and\s+)?|and\s+)"([^"\n]+)"/.exec(after);
    }
  }
  return references;
}

describe('reading references', () => {
  it('finds quoted headings, anchors and headings that run over comment lines', () => {
    const text = [
      '// see docs/decisions.md "Forwarding" and more',
      '[decisions.md](decisions.md) "Spawner".',
      '`docs/decisions.md`',
      '"svc-agent", "Remote sign-in through the agent" and "Metrics".',
      ' * (docs/decisions.md "svcd runs as one',
      ' * bundle")',
      '[decisions.md, "Web UI"](decisions.md#web-ui)',
      'the docs (docs/decisions.md). "Not a reference"',
    ].join('\n');
    expect(referencesIn(text)).toEqual([
      { line: 1, heading: 'Forwarding' },
      { line: 2, heading: 'Spawner' },
      { line: 3, heading: 'svc-agent' },
      { line: 3, heading: 'Remote sign-in through the agent' },
      { line: 3, heading: 'Metrics' },
      { line: 5, heading: 'svcd runs as one bundle' },
      { line: 7, heading: 'Web UI' },
      { line: 7, anchor: 'web-ui' },
    ]);
  });

  it('slugs headings as GitHub does', () => {
    expect(slug('Written by hand, and why')).toBe('written-by-hand-and-why');
    expect(slug('API, transports and budgets')).toBe('api-transports-and-budgets');
    expect(slug('Forwarding (`X-Target-Host`)')).toBe('forwarding-x-target-host');
    expect([...headingsOf('# A\n## B\n```\n## C\n```\n## B\n').anchors]).toEqual(['a', 'b', 'b-1']);
  });
});

describe('docs/decisions.md', () => {
  const text = readFileSync(join(ROOT, DECISIONS), 'utf8');
  const { names, anchors } = headingsOf(text);

  it('every reference to it names a heading it has', () => {
    const broken: string[] = [];
    let count = 0;
    for (const file of repositoryFiles()) {
      if (file === DECISIONS || file === SELF) continue;
      const content = read(file);
      if (content === undefined || !content.includes('decisions.md')) continue;
      for (const ref of referencesIn(content)) {
        count++;
        if (ref.heading !== undefined && !names.has(ref.heading.replace(/\s+/g, ' ')))
          broken.push(`${file}:${ref.line}: no heading "${ref.heading}"`);
        if (ref.anchor !== undefined && !anchors.has(ref.anchor))
          broken.push(`${file}:${ref.line}: no anchor #${ref.anchor}`);
      }
    }
    expect(broken).toEqual([]);
    expect(count).toBeGreaterThan(0); // the scan found the references it exists for
  });

  it('its own links to its headings resolve', () => {
    const missing = [...withoutFences(text).matchAll(/\]\(#([^)\s]+)\)/g)]
      .map((m) => m[1]!)
      .filter((anchor) => !anchors.has(anchor));
    expect(missing).toEqual([]);
  });
});

describe('relative links of README.md and docs/*.md', () => {
  const files = repositoryFiles().filter((f) => f === 'README.md' || /^docs\/[^/]+\.md$/.test(f));

  it('reach a file, and a heading of it when they name one', () => {
    const broken: string[] = [];
    for (const file of files) {
      const content = read(file);
      if (content === undefined) continue;
      const lines = withoutFences(content).split('\n');
      lines.forEach((text, index) => {
        for (const match of text.matchAll(/\]\(([^)\s]+)(?:\s+"[^"]*")?\)/g)) {
          const target = match[1]!;
          if (/^[a-z][a-z0-9+.-]*:/i.test(target) || target.startsWith('#')) continue;
          const [path, anchor] = target.split('#') as [string, string | undefined];
          const resolved = resolve(ROOT, dirname(file), decodeURIComponent(path));
          const where = `${file}:${index + 1}: ${target}`;
          if (!existsSync(resolved)) broken.push(`${where}: no such file`);
          else if (anchor !== undefined && resolved.endsWith('.md') && statSync(resolved).isFile()) {
            if (!headingsOf(readFileSync(resolved, 'utf8')).anchors.has(anchor))
              broken.push(`${where}: no heading with that anchor`);
          }
        }
      });
    }
    expect(files.length).toBeGreaterThan(1);
    expect(broken).toEqual([]);
  });
});
