// Summarises V8 .cpuprofile files (from `npm run bench -- --profile`): top functions by self time
// and by inclusive time. Usage: node bench/profile-summary.ts <file.cpuprofile>… [--top 25]
import { readFileSync } from 'node:fs';
import { relative } from 'node:path';
import { parseArgs } from 'node:util';

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  hitCount?: number;
  children?: number[];
}
interface Profile {
  nodes: ProfileNode[];
  samples?: number[];
  timeDeltas?: number[];
  startTime: number;
  endTime: number;
}

const { values, positionals } = parseArgs({ options: { top: { type: 'string', default: '25' } }, allowPositionals: true });
const top = Number(values.top);
const root = `${import.meta.dirname}/..`;

for (const file of positionals) {
  const profile = JSON.parse(readFileSync(file, 'utf8')) as Profile;
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const parent = new Map<number, number>();
  for (const node of profile.nodes) for (const child of node.children ?? []) parent.set(child, node.id);
  const selfUs = new Map<number, number>();
  const samples = profile.samples ?? [];
  const deltas = profile.timeDeltas ?? [];
  samples.forEach((id, i) => selfUs.set(id, (selfUs.get(id) ?? 0) + (deltas[i] ?? 0)));
  const label = (node: ProfileNode): string => {
    const url = node.callFrame.url.replace(/^file:\/\//, '');
    const where = url === '' ? '(native)' : `${url.startsWith('/') ? relative(root, url) : url}:${node.callFrame.lineNumber + 1}`;
    return `${node.callFrame.functionName || '(anonymous)'} ${where}`;
  };
  const self = new Map<string, number>();
  const total = new Map<string, number>();
  for (const [id, us] of selfUs) {
    const node = byId.get(id)!;
    self.set(label(node), (self.get(label(node)) ?? 0) + us);
    const seen = new Set<string>();
    for (let cur: number | undefined = id; cur !== undefined; cur = parent.get(cur)) {
      const l = label(byId.get(cur)!);
      if (seen.has(l)) continue;
      seen.add(l);
      total.set(l, (total.get(l) ?? 0) + us);
    }
  }
  const all = [...selfUs.values()].reduce((a, b) => a + b, 0);
  const idle = [...selfUs].filter(([id]) => byId.get(id)?.callFrame.functionName === '(idle)').reduce((a, [, us]) => a + us, 0);
  const pct = (us: number): string => `${((us / all) * 100).toFixed(1).padStart(5)}%`;
  process.stdout.write(`\n${file}: ${(all / 1000).toFixed(0)} ms sampled, ${pct(all - idle)} busy\n`);
  process.stdout.write(`  self time:\n`);
  for (const [l, us] of [...self].sort((a, b) => b[1] - a[1]).slice(0, top)) process.stdout.write(`  ${pct(us)}  ${l}\n`);
  process.stdout.write(`  inclusive time (busy frames):\n`);
  for (const [l, us] of [...total]
    .filter(([l]) => !l.startsWith('(root)') && !l.startsWith('(idle)') && !l.startsWith('(program)'))
    .sort((a, b) => b[1] - a[1])
    .slice(0, top))
    process.stdout.write(`  ${pct(us)}  ${l}\n`);
}
